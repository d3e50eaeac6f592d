"""The file to hand to spark-submit: it runs the rmqctl command line in the driver that spark-submit starts, so
`rmqctl spark ...` uses the submitted master and configuration.

    spark-submit --master spark://head:7077 --py-files rmqctl.zip rmqctl/spark/submit.py \
        spark stats --store /shared/broker-a/store --store /shared/broker-b/store
"""
from rmqctl.cli.main import main

if __name__ == "__main__":
    main()
