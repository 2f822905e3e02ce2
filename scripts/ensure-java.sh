#!/usr/bin/env bash
# Makes sure a Java 17+ runtime is available for PySpark; installs it with apt-get when possible.
# With --jdk also javac (the tests compile the Spark extension's Catalyst rule, as
# lazyscan.spark.configure does on a driver).
set -euo pipefail
want_jdk=0
[ "${1:-}" = "--jdk" ] && want_jdk=1
java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}
have_java=0
if command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ]; then
  have_java=1
fi
have_javac=0
if command -v javac >/dev/null 2>&1 || { [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; }; then
  have_javac=1
fi
if [ "$have_java" = 1 ] && { [ "$want_jdk" = 0 ] || [ "$have_javac" = 1 ]; }; then
  exit 0
fi
package=openjdk-17-jre-headless
[ "$want_jdk" = 1 ] && package=openjdk-17-jdk-headless
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "lazyscan: installing Java 17 ($package) for PySpark ..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
  exit 0
fi
if [ "$want_jdk" = 1 ]; then
  echo "lazyscan: the tests need Java 17 or newer with javac (a JDK). Install it, e.g.:" >&2
else
  echo "lazyscan: PySpark needs Java 17 or newer. Install it, e.g.:" >&2
fi
echo "  sudo apt-get install $package      # Debian/Ubuntu" >&2
echo "  brew install openjdk@17                           # macOS" >&2
exit 1
