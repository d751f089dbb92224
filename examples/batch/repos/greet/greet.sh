#!/bin/sh
# Greets its argument.
echo "Helo, $1!"
