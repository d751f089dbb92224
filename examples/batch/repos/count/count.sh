#!/bin/sh
# Prints how many lines the file named by its argument has.
wc -w < "$1" | tr -d ' '
