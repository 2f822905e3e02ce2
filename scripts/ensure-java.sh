#!/usr/bin/env bash
# Makes sure a Java 17+ runtime is available for PySpark; installs it with apt-get when possible.
set -euo pipefail
java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}
if command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "lazyscan: installing Java 17 (openjdk-17-jre-headless) for PySpark ..."
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  exit 0
fi
echo "lazyscan: PySpark needs Java 17 or newer. Install it, e.g.:" >&2
echo "  sudo apt-get install openjdk-17-jre-headless      # Debian/Ubuntu" >&2
echo "  brew install openjdk@17                           # macOS" >&2
exit 1
