#!/bin/sh
got=$(sh greet.sh Ada)
[ "$got" = "Hello, Ada!" ] || { echo "greet.sh Ada printed '$got', want 'Hello, Ada!'"; exit 1; }
echo "ok"
