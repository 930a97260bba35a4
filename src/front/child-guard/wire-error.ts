// A slot process's failure as the caller gets it: the wire form it sends
// (protocol/jobs.ts WireError, plain data across the wire) made back into the
// failed JobOutcome the HTTP layer answers with: the ApiError (its code, logs,
// failure) and the job's telemetry (timings, usage, egress, phase, security).
// The CPU a usage claims is replaced by the kernel's count (slot-job.ts).
import { ApiError } from '../../common/errors.js';
import { failedJob, wireTelemetry, type JobOutcome, type WireError } from '../../protocol/jobs.js';

/** The failed outcome a slot process's `failed` message stands for. */
export function fromWire(w: WireError): JobOutcome {
  const error = new ApiError(w.code, w.message, {
    ...(w.detail === undefined ? {} : { cause: w.detail }),
    ...(w.logs === undefined ? {} : { logs: w.logs }),
    ...(w.timeout === undefined ? {} : { timeout: w.timeout }),
    ...(w.failure === undefined ? {} : { failure: w.failure }),
    ...(w.housekeeping === undefined ? {} : { housekeeping: w.housekeeping }),
    ...(w.internal === undefined ? {} : { internal: w.internal }),
  });
  return failedJob(error, { ...wireTelemetry(w), ...(w.phase === undefined ? {} : { phase: w.phase }) });
}
