#!/bin/sh
# A DNS-to-switch script as BookKeeper runs its networkTopologyScriptFileName: host names as
# arguments, one /region/rack per host on stdout, in the same order. This one reads the region
# from the host name (bk07.us-east.example.net -> /us-east/...) and puts three consecutive
# node numbers on each rack, as src/trimtab/data/sample_inventory.csv lays them out.
for host in "$@"; do
    region=$(echo "$host" | cut -d. -f2)
    n=$(echo "$host" | sed -e 's/^[a-z]*0*//' -e 's/[.:].*//')
    echo "/$region/rack$(( (n - 1) / 3 % 3 + 1 ))"
done
