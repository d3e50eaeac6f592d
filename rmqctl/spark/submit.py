"""The file to hand to spark-submit: it runs the rmqctl command line in the driver that spark-submit starts, so
`rmqctl spark ...` uses the submitted master and configuration.

    spark-submit --master spark://head:7077 --py-files rmqctl.zip rmqctl/spark/submit.py \
        spark stats --store /shared/broker-a/store --store /shared/broker-b/store

A launcher, not a module of the spark package: it starts the package's entry point (`python -m rmqctl`) by
name, so nothing in rmqctl.spark imports the CLI that sits above it.
"""

import runpy

if __name__ == "__main__":
    runpy.run_module("rmqctl", run_name="__main__", alter_sys=True)
