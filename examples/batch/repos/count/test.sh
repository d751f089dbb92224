#!/bin/sh
got=$(sh count.sh sample.txt)
[ "$got" = 2 ] || { echo "count.sh sample.txt printed $got, want 2"; exit 1; }
echo "ok"
