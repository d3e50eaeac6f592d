"""Operations on a store, each returning results (dataclasses, dicts) for the CLI and for notebooks."""

VERIFY_PARTS = ("commitlog", "consumequeue", "index", "timer")  # what `verify --only` can limit the findings to
