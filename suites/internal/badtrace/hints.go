package badtrace

// hints name, per check (its Key), the mutations to try first, where the
// families' own order would choose a less telling one: an ID, or the
// beginning of IDs ("shift-attempt[2,"). Each says, in its
// comment, the wrong behaviour it stands for. A hinted mutation still has
// to make the check fail, and the generator still prefers, among all the
// mutations, one that leaves the spec's other checks passing.
var hints = map[string][]string{
	// A client that ignores the locality weights splits the RPCs evenly.
	"a56/eds-locality-weights A56-WEIGHTED-TARGET-SPLIT": {"split-evenly["},
	// An RPC sent during the switch fails: the old policy stopped serving.
	"l9/switch-service-config L9-SWITCH-OLD-SERVES": {"fail-rpc[s20]"},
	"l9/switch-cds-lb-policy L9-SWITCH-OLD-SERVES":  {"fail-rpc[s20]"},
	// r1 fails while the channel connects instead of waiting for the picker.
	"l9/pick-queues-until-picker L9-PICK-QUEUE-UNTIL-PICKER": {"fail-rpc[r1]"},
	// r1, fail-fast, is held until the connection instead of failing at once.
	"l9/pick-fails-fast-in-tf L9-PICK-FAILFAST-TF": {"succeed-rpc[r1", "delay-result[r1"},
	// The old policy (pick_first) keeps the RPCs after the switch on b1.
	"l9/switch-service-config L9-SWITCH-ON-CONFIG": {"pin-backend["},
	"l9/switch-cds-lb-policy L9-SWITCH-ON-CONFIG":  {"pin-backend["},
	// The requirement monitors (suites/monitor), each on a breach of its
	// invariant rather than on a trace that no longer exercises it:
	// p1 (b2) starts 40 ms before p0's failover timer fires.
	"a56/failover-timer-dropped-primary A56-CHOOSE-PENDING-TIMER monitor failover-not-before-timer": {"shift-attempt[2,-40ms]"},
	// p2 (b3) starts 40 ms before p1's failover timer fires.
	"a56/eds-priority-failover A56-CHOOSE-PENDING-TIMER monitor failover-not-before-timer": {"shift-attempt[8,-40ms]"},
	// The second attempt 290 ms after the first.
	"a61/he-three-dropped A61-HE-DELAY-DEFAULT monitor he-attempt-delay": {"shift-attempt[2,+40ms]"},
	// After the refusal the client waits out the delay.
	"a61/he-refused-ipv6 A61-HE-FAILURE-NEXT-ADDRESS monitor he-failure-next-address": {"shift-attempt[2,+150ms]"},
	// IPv6 before IPv4, whose address comes first in the list.
	"a61/addr-interleave A61-ADDR-INTERLEAVE monitor he-interleave": {"swap-attempts[1,2]"},
	// TRANSIENT_FAILURE while the IPv4 attempt is still in flight.
	"a61/he-all-refused A61-HE-NO-TF-DURING-PASS monitor he-no-tf-during-pass": {"hurry-state[2]"},
	// The re-resolution request 40 ms after the pass ended.
	"a61/he-all-refused A61-HE-PASS-END-RERESOLVE monitor he-pass-end-reresolve": {"shift-resolve-now[1,+40ms]"},
	// The round of failures after the pass brings no re-resolution.
	"a61/he-all-refused A61-HE-AFTER-PASS-RERESOLVE-COUNT monitor he-reresolve-per-round": {"drop-resolve-now[2]"},
	// b1 reconnected at once, not after its backoff.
	"a62/sticky-tf-until-ready A62-STICKY-TF-RECONNECTS monitor sticky-tf-backoff": {"repeat-attempt["},
	// r1, without wait_for_ready, waits in TRANSIENT_FAILURE until its deadline.
	"a62/tf-picks-fail-fast A62-TF-PICKS monitor tf-picks": {"set-code[r1,DEADLINE_EXCEEDED]"},
	// The checks beside a monitor keep the mutations they had before it
	// (which break the monitor too): TRANSIENT_FAILURE before any address
	// failed; the IPv6 addresses out of their order; the first attempt
	// late; the round's re-resolution missing; r1 served in
	// TRANSIENT_FAILURE; p0 tried late.
	"a61/he-all-refused A61-HE-PASS-ENDS-ALL-FAILED":            {"replace-state[1,TRANSIENT_FAILURE]"},
	"a61/addr-interleave A61-ADDR-FLATTEN":                      {"shift-attempt[2,+40ms]"},
	"a61/he-three-dropped A61-HE-FIRST-PASS":                    {"shift-attempt[1,+40ms]"},
	"a61/he-all-refused A61-HE-AFTER-PASS-RERESOLVE-COUNT":      {"drop-resolve-now[2]"},
	"a62/tf-picks-fail-fast A62-TF-PICKS #1":                    {"succeed-rpc[r1,b1]"},
	"a56/failover-timer-dropped-primary A56-FAILOVER-TIMER-10S": {"shift-attempt[1,+40ms]"},
	// p1, the same child under its new place, opens a new connection at the swap.
	"a56/config-name-is-identity A56-CONFIG-NAME-IS-IDENTITY": {"add-attempt[198.19.0.2:50051,config-update#"},
	// p0, named again and chosen, connects anew instead of being reactivated.
	"a56/removed-child-seed A56-READDED-CHILD-NOT-REACTIVATED":   {"add-attempt[198.19.0.1:50051,config-update#3]"},
	"a56/removed-child-env-revert A56-CHILD-CACHE-ENV-REVERT #1": {"add-attempt[198.19.0.1:50051,config-update#3]"},
	// p1 is tried 400 ms after p0 failed: priority waited on a failed child.
	"a56/eds-priority-failover A56-TF-FAILOVER-AT-ONCE": {"shift-attempt[3,+400ms]"},
	// p1 is destroyed, its connection to b2 closed, before EDS drops it:
	// when priority returns to p0, or while the switch keeps it.
	"a56/eds-priority-return-and-remove A56-DEACTIVATE-ON-HIGHER": {"shift-event[conn-close#1,-40ms]"},
	"a56/eds-priority-removed-cached A56-CHILD-CACHE-ENV-REVERT":  {"shift-event[conn-close#1,-40ms]"},
	"a56/eds-priority-removed-cached A56-REMOVED-CHILD-RETAINED":  {"shift-event[conn-close#1,-40ms]"},
	// p1, dropped from EDS, keeps its connection to b2.
	"a56/eds-priority-return-and-remove A56-REMOVED-CHILD-DESTROYED": {"drop-event[conn-close#1]"},
	// p0 is not destroyed when the config drops it.
	"a56/removed-child-latest A56-REMOVED-CHILD-DESTROYED": {"drop-event[subchannel-shutdown#1]"},
	// The new p0 makes no new connection: the old one was kept.
	"a56/removed-child-latest A56-READDED-CHILD-NEW": {"drop-attempt[3]"},
	// The IPv4 attempt never comes: the timer did not start the next address.
	"a61/he-dropped-ipv6 A61-HE-TIMER-NEXT-ADDRESS": {"drop-attempt[2]"},
	// The second SYN 40 ms late: the delay is not 250 ms.
	"a61/he-dropped-ipv6 A61-HE-DELAY-DEFAULT":       {"shift-attempt[2,+40ms]"},
	"a61/he-delay-clamp-low A61-HE-DELAY-CLAMP":      {"shift-attempt[2,+40ms]"},
	"a61/dns-pf-happy-eyeballs A61-HE-DELAY-DEFAULT": {"shift-attempt[2,+40ms]"},
	// The second address is never tried while the first one's SYN hangs:
	// no Happy Eyeballs.
	"a61/dns-pf-happy-eyeballs A61-HE-NOT-GATED":                  {"drop-attempt[2]"},
	"a61/he-delay-clamp-high A61-HE-DELAY-CLAMP":                  {"shift-attempt[2,+40ms]"},
	"a61/xds-dual-stack-endpoint A61-XDS-ADDITIONAL-ADDRESSES #2": {"shift-attempt[2,+40ms]"},
	// After the refusal the client waits out the delay.
	"a61/he-refused-ipv6 A61-HE-FAILURE-NEXT-ADDRESS": {"shift-attempt[2,+150ms]"},
	// The RPCs ride the IPv6 connection, not the first one established.
	"a61/he-first-ready-wins A61-HE-FIRST-READY-WINS": {"repick["},
	// A third timer, after the last address.
	"a61/he-three-dropped A61-HE-TIMER-UNLESS-LAST": {"copy-event[timer-start#2,"},
	// After the pass an address is not retried.
	"a61/he-all-refused A61-HE-AFTER-PASS-ALL-ADDRESSES": {"drop-attempt[3]", "drop-attempt[4]"},
	// The new pass attempts a subchannel that is CONNECTING, or in backoff.
	"a61/he-new-list A61-HE-TURN-CONNECTING":    {"add-attempt[198.19.0.1:50051,resolver-update#2]"},
	"a61/he-turn-tf-skips A61-HE-TURN-TF-SKIPS": {"add-attempt[198.19.0.1:50051,resolver-update#2]"},
	// The pass reaches b1, IDLE, and does not connect it.
	"a61/he-turn-idle A61-HE-TURN-IDLE": {"drop-attempt[5]"},
	// The status says nothing of the child's connection error.
	"a61/rr-error-detail A61-PETIOLE-ERROR-DETAIL": {"drop-err-address["},
	// b1's pick_first, its chosen address unhealthy, goes on to the healthy IPv6 one.
	"a61/health-chosen-address A61-HEALTH-WATCH-CHOSEN": {"add-attempt[[fd00:c0f::b:1]:50051,balancer-state#2]"},
	// Without health checking, NOT_SERVING still turns the channel TRANSIENT_FAILURE.
	"a61/health-none-configured A61-HEALTH-NONE-IS-RAW": {"insert-state[2,TRANSIENT_FAILURE]"},
	// After the loss b1 reconnects to its old first address.
	"a61/rr-reorder A61-PETIOLE-REORDER-PUSHED": {"retarget-attempt["},
	// b1's endpoint, on both lists, is reconnected at the update.
	"a61/rr-changed-set A61-PETIOLE-SET-DIFF": {"add-attempt[[fd00:c0f::b:1]:50051,resolver-update#2]"},
	// r2 goes elsewhere than r1.
	"a61/rh-lazy A61-RH-PICKER": {"serve-on[r2,"},
	// r2 lands on b2's entry, served by another endpoint.
	"a61/rh-ring A61-RH-ENTRY-PER-ENDPOINT": {"serve-on[r2,"},
	// After the reorder, r1's key still goes to b1.
	"a61/rh-ring A61-RH-REORDER-MOVES": {"serve-on[r4,"},
	// A pick on b1's failing entry brings a connection attempt to b1.
	"a61/rh-no-tf-connect A61-RH-PICKER-NO-TF-CONNECT": {"add-attempt[198.19.0.1:50051,rpc-start#3]"},
	// Through xDS, r2 lands on b2's entry, served by another endpoint.
	"a61/xds-rh-header A61-RH-ENTRY-PER-ENDPOINT": {"serve-on[r2,"},
	// r5, on the weighted ring b1's, served by b2 (where the unweighted ring puts it).
	"a61/xds-rh-dedup A61-RH-ENTRY-PER-ENDPOINT": {"serve-on[r5,b2]"},
	// The attribute-only update reconnects b1.
	"a61/xds-rh-dedup A61-RH-DEDUP-NO-ATTRIBUTES": {"add-attempt[198.19.0.1:50051,"},
	// r1, every entry failing, waits for its deadline instead of failing.
	"a61/rh-all-tf A61-RH-PICKER-ALL-TF": {"set-code[r1,DEADLINE_EXCEEDED]"},
	// No connection to b3, the IDLE endpoint the update brought.
	"a61/rh-all-tf A61-RH-PROACTIVE-CONNECT": {"drop-attempt[5]"},
	// r2, landing on failing b1, is failed instead of moving on to b3.
	"a61/rh-all-tf A61-RH-PICKER": {"fail-rpc[r2]"},
	// The ejection is lost when e1's locality and health change.
	"a61/xds-od-keys-addresses-only A61-OD-KEYS-ADDRESSES-ONLY": {"serve-on[n1,"},
	// e1, counted per address, is not ejected: an RPC after the sweep reaches it, over b2.
	"a61/xds-od-per-endpoint A61-OD-PER-ENDPOINT": {"serve-on[n1,b2]"},
	// The ejection drops e1's connection: b2 is connected anew while e1 is ejected.
	"a61/xds-od-per-endpoint A61-OD-EJECT-VIA-HEALTH #1": {"add-attempt[198.19.0.2:50051,fault-clear#1]"},
	// Only b1's subchannel is ejected: e1's new connection over b2 serves.
	"a61/xds-od-eject-all-addresses A61-OD-EJECT-ALL-ADDRESSES #1": {"serve-on[n1,b2]"},
	// Counted per priority, b1 is not ejected and priority 0 serves again.
	"a75/od-across-priorities A75-AGG-OD-ACROSS-PRIORITIES #1":           {"serve-on[n1,b1]"},
	"a75/od-across-priorities-aggregate A75-AGG-OD-ACROSS-PRIORITIES #1": {"serve-on[n1,b1]"},
	// With the guard on, the additional address is ignored: r1 fails on b1.
	"a61/xds-dualstack-guard-on A61-XDS-ENV-GUARD #1": {"fail-rpc[r1]"},
	// The invalid EDS resource is accepted.
	"a61/xds-additional-address-unset A61-XDS-ADDITIONAL-ADDRESS-UNSET NACKed":          {"nack-to-ack[1]"},
	"a61/xds-additional-address-pipe A61-XDS-ADDITIONAL-ADDRESS-VALIDATED NACKed":       {"nack-to-ack[1]"},
	"a61/xds-additional-address-host-name A61-XDS-ADDITIONAL-ADDRESS-VALIDATED NACKed":  {"nack-to-ack[1]"},
	"a61/xds-additional-address-named-port A61-XDS-ADDITIONAL-ADDRESS-VALIDATED NACKed": {"nack-to-ack[1]"},
	"a61/xds-additional-address-duplicate A61-XDS-ADDITIONAL-ADDRESS-VALIDATED NACKed":  {"nack-to-ack[1]"},
	// The lost connection makes pick_first reconnect at once, not IDLE.
	"a62/connection-lost-idle A62-CONNECTION-LOST-IDLE #1":            {"replace-state[3,CONNECTING]"},
	"a62/connection-lost-backend-stopped A62-CONNECTION-LOST-IDLE #1": {"replace-state[3,CONNECTING]"},
	"a62/connection-lost-idle A62-CONNECTION-LOST-IDLE #2":            {"add-attempt[198.19.0.1:50051,balancer-state#"},
	"a62/connection-lost-backend-stopped A62-CONNECTION-LOST-IDLE #2": {"add-attempt[198.19.0.1:50051,balancer-state#"},
	// r2, wait_for_ready, is answered at once, in TRANSIENT_FAILURE.
	"a62/tf-picks-fail-fast A62-TF-PICKS #2": {"hurry-result[r2]"},
	// The channel never goes IDLE: sticky TRANSIENT_FAILURE outlives the idle timeout.
	"a62/sticky-tf-idle-timeout A62-STICKY-TF-IDLE-ENDS #1":   {"drop-channel-state[3]"},
	"a62/sticky-tf-idle-after-rpc A62-STICKY-TF-IDLE-ENDS #1": {"drop-channel-state[3]"},
	// r1 fails at once: leaving IDLE, the channel resumed TRANSIENT_FAILURE.
	"a62/sticky-tf-idle-timeout A62-STICKY-TF-IDLE-ENDS #2":   {"fail-rpc[r1]"},
	"a62/sticky-tf-idle-after-rpc A62-STICKY-TF-IDLE-ENDS #2": {"fail-rpc[r1]"},
	// p0's failure shows on the READY channel.
	"a62/sticky-tf-priority A62-STICKY-TF-PRIORITY #1": {"insert-state[2,"},
	// A reconnection that does not wait out the backoff.
	"a62/sticky-tf-until-ready A62-STICKY-TF-RECONNECTS": {"repeat-attempt[1,+100ms]"},
	// TRANSIENT_FAILURE does not stick.
	"a62/sticky-tf-reresolve-every-round A62-STICKY-TF": {"insert-state[2,"},
	"a62/sticky-tf-new-list A62-STICKY-TF #1":           {"insert-state[2,"},
	"a62/sticky-tf-new-list-all-fail A62-STICKY-TF #1":  {"insert-state[2,"},
	// The new pass attempts b2, in backoff.
	"a62/sticky-tf-new-list-all-fail A62-STICKY-TF #2": {"add-attempt[198.19.0.2:50051,resolver-update#2]"},
	// An address is never tried.
	"a62/shuffle-false-keeps-order A62-SHUFFLE-CONFIG": {"drop-attempt["},
	// One list tried out of its order: its first two endpoints the other way.
	"a62/shuffle-absent-every-list A62-SHUFFLE-OFF-KEEPS-ORDER": {"swap-attempts[1,2]"},
	"a62/shuffle-false-every-list A62-SHUFFLE-OFF-KEEPS-ORDER":  {"swap-attempts[1,2]"},
	// A client that takes the knob and never shuffles.
	"a62/shuffle-uniform-2 A62-SHUFFLE-UNIFORM":          {"unshuffle["},
	"a62/shuffle-uniform-3 A62-SHUFFLE-UNIFORM":          {"unshuffle["},
	"a62/xds-pick-first-shuffle-uniform A62-XDS-SHUFFLE": {"unshuffle["},
	// A client that does not take a config carrying the knob: it never connects.
	"a62/shuffle-uniform-2 A62-SHUFFLE-UNSUPPORTED-IGNORED":     {"drop-all-attempts["},
	"a62/shuffle-uniform-3 A62-SHUFFLE-UNSUPPORTED-IGNORED":     {"drop-all-attempts["},
	"a62/shuffle-true-one-list A62-SHUFFLE-UNSUPPORTED-IGNORED": {"drop-all-attempts["},
	// An address is never tried.
	"a62/shuffle-true-one-list A62-SHUFFLE-CONFIG": {"drop-attempt["},
	// The policies above the cluster's priority in the other order.
	"a75/aggregate-eds-then-dns A75-AGG-PER-CLUSTER-POLICIES-ABOVE": {"swap-policies[1,conform_outlier_detection,conform_xds_override_host]"},
	// RPCs leave eds1's pick_first for its second endpoint.
	"a75/aggregate-underlying-pick-first A75-AGG-LB-FROM-UNDERLYING":   {"serve-on[r2,"},
	"a75/aggregate-underlying-pick-first A75-AGG-LB-POLICY-IGNORED #1": {"serve-on[r2,"},
	// The invalid Cluster is accepted.
	"a75/idle-timeout-not-http-options A75-IDLE-TIMEOUT-NOT-HTTP-OPTS-NACK NACKed":  {"nack-to-ack[1]"},
	"a75/idle-timeout-seconds-negative A75-IDLE-TIMEOUT-SECONDS-RANGE-NACK NACKed":  {"nack-to-ack[1]"},
	"a75/idle-timeout-seconds-too-large A75-IDLE-TIMEOUT-SECONDS-RANGE-NACK NACKed": {"nack-to-ack[1]"},
	"a75/idle-timeout-nanos-negative A75-IDLE-TIMEOUT-NANOS-RANGE-NACK NACKed":      {"nack-to-ack[1]"},
	"a75/idle-timeout-nanos-too-large A75-IDLE-TIMEOUT-NANOS-RANGE-NACK NACKed":     {"nack-to-ack[1]"},

	// Reference-only checks.
	// p1's saved picker is not used: p1 connects anew.
	"a56/return-to-higher-then-reactivate A56-CHILD-STATE-KEPT": {"repeat-attempt[2,"},
	// p0's re-resolution request is passed up, not dropped.
	"a56/ignore-reresolution-requests A56-IGNORE-RERESOLUTION": {"add-resolve-now["},
	// b1 reconnects while it is unhealthy.
	"a61/health-one-unhealthy A61-HEALTH-RAW-STATE-CONNECTS": {"repeat-attempt[1,"},
	// b2's changed endpoint keeps its old child: no new connection.
	"a61/rr-changed-set A61-PETIOLE-CHANGED-SET-NEW": {"drop-attempt[3]"},
	// b2 gets a new subchannel at the move instead of keeping its own.
	"a75/session-follows-endpoint-across-priorities A75-OVERRIDE-OWNS-SUBCHANNELS": {"copy-event[subchannel-new#2,"},
	// A connection no session uses any more is kept.
	"a75/session-follows-endpoint-across-priorities A75-SSA-RETAIN-ONLY-IN-SESSION": {"drop-event[subchannel-shutdown#"},
	// b3, used without a session only, is kept at the move.
	"a75/override-last-used-time A75-OVERRIDE-LAST-USED-SSA-ONLY": {"drop-event[subchannel-shutdown#1]"},
}
