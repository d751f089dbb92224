#!/bin/sh
# Prints the larger of its two arguments.
if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi
