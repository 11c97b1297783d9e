#!/bin/sh
# Usage: expect_exit.sh CODE SECONDS COMMAND [ARGS...]
# Runs COMMAND (an mpirun line) and passes only if it ends by itself within
# SECONDS with exit status CODE: for rdmx_abort, whose job must end with the
# code it was given. Exit 0 (the job did not end as aborted), another status,
# or the deadline (the job hung) fail it; the output says which. Status 77
# (a rank found no RDMA device) is passed on: ctest reports a skip.
code="$1"
secs="$2"
shift 2
timeout --kill-after=10 "$secs" "$@"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "expect_exit: FAIL: still running after $secs s (status $rc): the job did not end"
  exit 1
fi
if [ "$rc" -eq 77 ]; then
  echo "expect_exit: SKIP (status 77: no RDMA device)"
  exit 77
fi
if [ "$rc" -ne "$code" ]; then
  echo "expect_exit: FAIL: exit status $rc, expected $code"
  exit 1
fi
echo "expect_exit: PASS: exit status $rc"
exit 0
