"""Running the jobs on a Spark cluster whose executors do not have this package installed.

``package``: the wheel and a packed environment archive for ``spark.archives`` (``logdir-gc package``).
``env_archive``: packs a virtual environment into a relocatable ``.tar.gz``.
``executor_check``: asks the executors, before the first step, whether they can import what the crawl needs.
"""
