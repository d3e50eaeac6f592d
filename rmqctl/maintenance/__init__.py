"""Every writer: append, rebuild, repair, clean, config and backup restore, with their staging, dispatch and
file writers. A writer takes the broker's lock, stages its new files, verifies them (checks/) and swaps them
in through an intent file (rmqctl.txn)."""
