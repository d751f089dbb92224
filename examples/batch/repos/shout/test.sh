#!/bin/sh
got=$(sh shout.sh "quiet please")
[ "$got" = "QUIET PLEASE" ] || { echo "shout.sh printed '$got', want 'QUIET PLEASE'"; exit 1; }
echo "ok"
