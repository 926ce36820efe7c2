"""One launch module per kernel family in cuda/.

Launchers take device pointers and sizes, pick the geometry (histkit.gpu.policy
decides), launch on the runtime's stream and return the geometries they used;
they do not validate user input (histkit.gpu.api does) and do not synchronise
unless a result is needed to go on (the sorts read nothing back: bad keys are
checked by the caller). A launcher owns its scratch: it allocates it from the
runtime and hands it to the caller's keep_alive list.

    common       Keys (keys on the device) and the launch shapes the families share
    histogram    atomic, naive (one warp, grid), privatized, fast
    partitioned  the two-pass partitioned histogram, and method="auto"
    scan         the exclusive scan
    sort         the atomic-cursor sort, the onesweep passes (stable and radix),
                 gather_values
    resident     the stable sort in one cooperative launch
"""
