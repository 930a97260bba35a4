// Imported first by the slot process's entry point (main.ts), before any
// script isolate exists.
//
// The front starts a slot process with --max-semi-space-size
// (src/common/config.ts SLOT_SEMI_SPACE_MB) to bound this process's own young
// generation; V8 reads it when a heap is made. SECURITY: V8 applies it to
// every heap made afterwards too, so each script isolate (isolated-vm) would
// get 16 MiB semi-spaces instead of its own 1-2 MiB, and isolated-vm counts the
// young generation as room beyond the isolate's memory limit: a script could
// hold several times its key's limit. Unset here, the isolates keep the limit
// they are given; this heap keeps the bound it was made with.
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--max-semi-space-size=0');
