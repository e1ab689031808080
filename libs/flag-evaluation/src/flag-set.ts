import { CompiledFlag, compileFlag } from './compile';
import { evaluateCompiled } from './evaluator';
import type { CompiledFlagResolver, EvaluationContext, EvaluationResult, FlagDefinition } from './types';

/**
 * The flags of one environment, compiled together so that prerequisites resolve to each other.
 * Immutable: when a flag changes, compile a new set and swap the reference (compiling is cheap
 * next to a network round trip, and readers never see a half-updated set).
 */
export class CompiledFlagSet implements CompiledFlagResolver<CompiledFlag> {
  private constructor(private readonly flags: ReadonlyMap<string, CompiledFlag>) {}

  /** Later definitions with the same key replace earlier ones. Never throws on bad data. */
  static compile(definitions: readonly FlagDefinition[]): CompiledFlagSet {
    const flags = new Map<string, CompiledFlag>();
    if (Array.isArray(definitions)) {
      for (const definition of definitions as readonly FlagDefinition[]) {
        const compiled = compileFlag(definition);
        flags.set(compiled.key, compiled);
      }
    }
    return new CompiledFlagSet(flags);
  }

  get size(): number {
    return this.flags.size;
  }

  get(key: string): CompiledFlag | undefined {
    return this.flags.get(key);
  }

  keys(): IterableIterator<string> {
    return this.flags.keys();
  }

  /** undefined when there is no such flag (the caller answers FLAG_NOT_FOUND its own way). */
  evaluate(key: string, ctx: EvaluationContext): EvaluationResult | undefined {
    const flag = this.flags.get(key);
    return flag === undefined ? undefined : evaluateCompiled(flag, ctx, this);
  }
}

/**
 * Compiles and evaluates one flag: for one-off evaluations (previews, tests). Prerequisites are
 * fetched through `lookup` and compiled once per call. Hot paths should keep a CompiledFlagSet.
 */
export function evaluateFlag(
  flag: FlagDefinition,
  ctx: EvaluationContext,
  lookup?: (key: string) => FlagDefinition | undefined,
): EvaluationResult {
  const compiled = compileFlag(flag);
  if (lookup === undefined) return compiled.evaluate(ctx);
  // Memoised so that a cycle meets the same CompiledFlag instance again and is detected.
  const seen = new Map<string, CompiledFlag | undefined>([[compiled.key, compiled]]);
  const resolver: CompiledFlagResolver<CompiledFlag> = {
    get(key) {
      if (seen.has(key)) return seen.get(key);
      const definition = lookup(key);
      const other = definition === undefined ? undefined : compileFlag(definition);
      seen.set(key, other);
      return other;
    },
  };
  return evaluateCompiled(compiled, ctx, resolver);
}
