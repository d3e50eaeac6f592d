"""verify and its checks: each part of a store judged against the records and the broker's rules, returning
findings (rmqctl.findings.Finding) that verify merges; the baseline policy beside them."""

VERIFY_PARTS = ("commitlog", "consumequeue", "index", "timer")  # what `verify --only` can limit the findings to
