"""Documents in, rows out: reading, tokenising, global-attention policies, batching, task
decoding and writing (import as `lfcli.pipelines`). Calls only `lfcli.models`."""
