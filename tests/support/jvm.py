"""JVM options for the Spark processes the tests start (local sessions, the Spark Connect
server, the standalone cluster's daemons, driver and executors).

Those JVMs live for seconds to minutes on small data, so the C2 compiler's threads cost more CPU
than its code saves, and on a 2-core machine that CPU is taken from the other test worker.
Stopping at C1 with the parallel collector took 27 % less CPU (178 against 245 CPU-seconds) and
about 15 % less time for the TPC-H and data-source Spark modules. Benchmarks keep Spark's defaults.
"""

TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
