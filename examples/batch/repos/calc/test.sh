#!/bin/sh
got=$(sh add.sh 2 3)
[ "$got" = 5 ] || { echo "add.sh 2 3 printed $got, want 5"; exit 1; }
echo "ok"
