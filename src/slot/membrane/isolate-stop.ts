// How a script's isolate is stopped: disposed at the deadline (the only thing
// that stops `while (true) {}`), with isolated-vm's own time limit behind it,
// and a check that the isolate's thread really stopped; one that runs on in
// native code no termination reaches is a catastrophic error: the process ends.
import type ivm from 'isolated-vm';

/**
 * isolated-vm's own time limit on the script's first turn (its synchronous part
 * and the microtasks it queues) is the script's deadline plus this: the
 * deadline's disposal comes first, and isolated-vm's limit is there for code
 * that disposal does not stop. When its limit passes and the code still runs
 * 5 s later, isolated-vm reports a catastrophic error ("Script failed to terminate").
 */
export const NATIVE_TIMEOUT_MARGIN_MS = 1_000;

/**
 * How long an isolate may take to stop after it is disposed. Disposing stops
 * JavaScript at its next interrupt check (milliseconds, measured), but some of
 * V8's builtins run in C++ without one: on a sparse array of length 2^32-1,
 * indexOf runs ~100 s and join ~200 s, and fill on a large one for ever, all
 * holding a core (and, for fill, gigabytes) that no deadline takes back. An
 * isolate still busy after this long is out of control: the process must end
 * (isolated-vm's README), and its supervisor starts another. Longer than
 * isolated-vm's own 5 s after NATIVE_TIMEOUT_MARGIN_MS, so that isolated-vm
 * reports the case it sees itself.
 */
export const ISOLATE_STOP_GRACE_MS = 10_000;

/**
 * Disposes the isolate and checks that its thread stops. A question is queued
 * to the isolate first: disposing settles it at once when the isolate is idle
 * or runs JavaScript; it stays unsettled only while the isolate's thread is
 * stuck in native code that no termination reaches, and then
 * onCatastrophicError is called after ISOLATE_STOP_GRACE_MS. Resolves once the
 * isolate's thread has stopped (never, while it is stuck: the process ends).
 */
export function disposeIsolate(
  isolate: ivm.Isolate,
  context: ivm.Context,
  onCatastrophicError: (message: string) => void,
): Promise<void> {
  if (isolate.isDisposed) return Promise.resolve();
  let probe: Promise<unknown> | undefined;
  try {
    probe = context.eval('0');
  } catch {
    // the context is released: nothing of the script can be running
  }
  isolate.dispose();
  if (!probe) return Promise.resolve();
  const timer = setTimeout(
    () =>
      onCatastrophicError(
        `an isolate went on running ${ISOLATE_STOP_GRACE_MS} ms after it was disposed (native code no termination reaches)`,
      ),
    ISOLATE_STOP_GRACE_MS,
  );
  // It must not keep a process alive that has nothing else to do.
  timer.unref();
  return probe.then(
    () => clearTimeout(timer),
    () => clearTimeout(timer),
  );
}
