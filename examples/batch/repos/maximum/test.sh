#!/bin/sh
for pair in "1 2 2" "7 3 7" "4 4 4"; do
  set -- $pair
  got=$(sh max.sh "$1" "$2")
  [ "$got" = "$3" ] || { echo "max.sh $1 $2 printed $got, want $3"; exit 1; }
done
echo "ok"
