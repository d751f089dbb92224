#!/bin/sh
# Prints its argument in capitals.
echo "$1" | tr 'A-Z' 'a-z'
