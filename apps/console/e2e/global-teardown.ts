/** jest's globalTeardown for the console project: stops the shared stack global-setup.ts started, if any. */
import type { RunningSharedStack } from './shared-stack.fixture';

export default async function globalTeardown(): Promise<void> {
  const started = (globalThis as { consoleSharedStack?: Promise<RunningSharedStack> }).consoleSharedStack;
  if (started) await (await started).stop();
}
