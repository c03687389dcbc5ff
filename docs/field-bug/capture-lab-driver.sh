#!/bin/sh
# capture.sh PID OUT.pcap: waits for the grpc-go driver that conform
# process PID starts in the lab's client namespace, then captures there.
while :; do
  drv=$(pgrep -P "$1" -f 'grpc-go@') && break
  sleep 0.05
done
exec nsenter -t "$drv" -n tcpdump -i any -s 0 --time-stamp-precision=nano -w "$2" \
  'tcp[tcpflags] & (tcp-syn|tcp-rst) != 0 or (ip6 proto 6 and ip6[53] & 0x06 != 0) or port 53 or tcp port 50051'
