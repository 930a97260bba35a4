// The request's host CPU budget: the CPU this process's one thread spends on the
// request's behalf (a call's start, encoding a result, an event or an exposed
// function's arguments), counted while the work runs, not only before each call.
import { MAX_HOST_CPU_MS, budgetError } from './budgets.js';

/** CPU time of this process's main thread (where Puppeteer and the membrane run), in milliseconds. */
function mainThreadCpuMs(): number {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
}

/** The budget and the clock, read at each use (the membrane's deps). */
interface BudgetSource {
  readonly limits: { readonly maxHostCpuMs?: number };
  now?(): number;
}

export class HostCpuBudget {
  readonly #budget: BudgetSource;
  /** Ends every call in flight with the budget's error: the work that took the budget past its end has run. */
  readonly #onSpent: () => void;
  /** Host CPU spent in this request's calls (their synchronous part), in milliseconds. */
  #hostCpuMs = 0;

  constructor(budget: BudgetSource, onSpent: () => void) {
    this.#budget = budget;
    this.#onSpent = onSpent;
  }

  #cpuBudgetMs(): number {
    return this.#budget.limits.maxHostCpuMs ?? MAX_HOST_CPU_MS;
  }

  /** Refuses to start (or to answer) a call once the budget is spent. */
  refuseOverBudget(m: string): void {
    if (this.#hostCpuMs > this.#cpuBudgetMs()) throw budgetError(`${m}: ${this.cpuBudgetMessage()}`);
  }

  cpuBudgetMessage(): string {
    return `this script has used its host CPU budget (${this.#cpuBudgetMs()} ms)`;
  }

  /**
   * Runs host work done for this request (a call's start, encoding a result, an
   * event or an exposed function's arguments) and counts its CPU. SECURITY: the
   * budget is checked during the request's calls, not only before each starts:
   * the work that takes it past the budget ends every call in flight at once
   * with the budget's error, and no call starts after.
   */
  charged<T>(work: () => T): T {
    const now = this.#budget.now ?? mainThreadCpuMs;
    const t0 = now();
    try {
      return work();
    } finally {
      const wasWithin = this.#hostCpuMs <= this.#cpuBudgetMs();
      this.#hostCpuMs += now() - t0;
      if (wasWithin && this.#hostCpuMs > this.#cpuBudgetMs()) this.#onSpent();
    }
  }
}
