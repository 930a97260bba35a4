// A slot process's failure as the caller gets it: the wire form it sends
// (protocol/jobs.ts WireError, plain data across the IPC channel) made back
// into the ApiError the HTTP layer answers with, its code, logs, timings and
// usage kept. The CPU a usage claims is replaced by the kernel's count (slot-job.ts).
import { ApiError } from '../../common/errors.js';
import type { WireError } from '../../protocol/jobs.js';

/** The ApiError a slot process's `failed` message stands for. */
export function fromWire(w: WireError): ApiError {
  const e = new ApiError(w.code, w.message, {
    ...(w.detail === undefined ? {} : { cause: w.detail }),
    ...(w.logs === undefined ? {} : { logs: w.logs }),
    ...(w.timeout === undefined ? {} : { timeout: w.timeout }),
    ...(w.failure === undefined ? {} : { failure: w.failure }),
    ...(w.housekeeping === undefined ? {} : { housekeeping: w.housekeeping }),
    ...(w.internal === undefined ? {} : { internal: w.internal }),
  });
  if (w.egress !== undefined) e.egress = w.egress;
  if (w.timings !== undefined) e.timings = w.timings;
  if (w.usage !== undefined) e.usage = { ...w.usage };
  if (w.phase !== undefined) e.phase = w.phase;
  if (w.security !== undefined) e.security = w.security;
  return e;
}
