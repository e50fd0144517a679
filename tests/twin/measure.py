"""Runs a command and prints its wall time and the peak RSS of its largest process.

Used by build.sh instead of /usr/bin/time, which a minimal Debian lacks. ru_maxrss of
RUSAGE_CHILDREN is the peak of the biggest waited-for descendant (the compiler or linker).
"""
import resource
import subprocess
import sys
import time

label, cmd = sys.argv[1], sys.argv[2:]
start = time.monotonic()
rc = subprocess.call(cmd)
wall = time.monotonic() - start
peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"measure: {label}: rc={rc} wall={wall:.0f}s peak_rss={peak_mib:.0f}MiB", file=sys.stderr)
sys.exit(rc)
