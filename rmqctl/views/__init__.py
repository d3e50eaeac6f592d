"""Read-only views of a store for people and notebooks (info, dump, locate, lookups, offsets, diff, timer
dumps), each returning plain results; nothing here writes a byte."""
