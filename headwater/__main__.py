"""``python -m headwater``, and the file to hand to ``spark-submit``.

spark-submit runs a Python *file*, not a console script, so a cluster job is::

    spark-submit --packages io.delta:delta-spark_4.2_2.13:4.4.0 \\
        "$(python -c 'import headwater.__main__ as m; print(m.__file__)')" sync conn.yaml
"""

from headwater.cli.app import main

if __name__ == "__main__":
    main()
