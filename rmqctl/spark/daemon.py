"""PySpark's Python daemon (pyspark.daemon, which forks the workers that run rmqctl's tasks) in a process group
of its own, named by `spark.python.daemon.module` for a local master. The workers restore Python's SIGINT
handler, and a local master's daemon is in the terminal's foreground process group: a Ctrl-C there reached
every worker, and each printed a KeyboardInterrupt traceback. Now only the driver sees it, cancels the job
and says so in one line (the JVM ignores SIGINT already: PySpark starts it so).
"""

import os
import runpy

if __name__ == "__main__":
    os.setpgid(0, 0)
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)
