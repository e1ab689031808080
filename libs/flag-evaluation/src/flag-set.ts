import { CompiledFlag, compileFlag, NO_SEGMENTS } from './compile';
import { evaluateCompiled } from './evaluator';
import { CompiledSegment, compileSegment } from './segment';
import type { CompiledFlagResolver, EvaluationContext, EvaluationResult, FlagDefinition, SegmentDefinition } from './types';

/**
 * The flags of one environment, compiled together so that prerequisites resolve to each other.
 * Immutable: when a flag changes, compile a new set and swap the reference (compiling is cheap
 * next to a network round trip, and readers never see a half-updated set).
 */
export class CompiledFlagSet implements CompiledFlagResolver<CompiledFlag> {
  private constructor(
    private readonly flags: ReadonlyMap<string, CompiledFlag>,
    /** The environment's segments, by key, for segmentMatch. */
    readonly segments: CompiledFlagResolver<CompiledSegment> & { readonly size: number },
  ) {}

  /**
   * Later definitions (flags or segments) with the same key replace earlier ones. Never throws on
   * bad data. Flags find their segments by key at evaluation (an unknown one does not match).
   */
  static compile(definitions: readonly FlagDefinition[], segments?: readonly SegmentDefinition[]): CompiledFlagSet {
    const flags = new Map<string, CompiledFlag>();
    if (Array.isArray(definitions)) {
      for (const definition of definitions as readonly FlagDefinition[]) {
        const compiled = compileFlag(definition);
        flags.set(compiled.key, compiled);
      }
    }
    const compiledSegments = new Map<string, CompiledSegment>();
    if (Array.isArray(segments)) {
      for (const definition of segments as readonly SegmentDefinition[]) {
        const compiled = compileSegment(definition);
        compiledSegments.set(compiled.key, compiled);
      }
    }
    return new CompiledFlagSet(flags, compiledSegments);
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
    return flag === undefined ? undefined : evaluateCompiled(flag, ctx, this, this.segments);
  }
}

/**
 * Compiles and evaluates one flag: for one-off evaluations (previews, tests). Prerequisites are
 * fetched through `lookup`, segments (segmentMatch) through `segmentLookup`, each compiled once per
 * call. Hot paths should keep a CompiledFlagSet.
 */
export function evaluateFlag(
  flag: FlagDefinition,
  ctx: EvaluationContext,
  lookup?: (key: string) => FlagDefinition | undefined,
  segmentLookup?: (key: string) => SegmentDefinition | undefined,
): EvaluationResult {
  const compiled = compileFlag(flag);
  const segments = segmentLookup === undefined ? NO_SEGMENTS : compilingResolver(segmentLookup, compileSegment);
  if (lookup === undefined) return compiled.evaluate(ctx, undefined, segments);
  return evaluateCompiled(compiled, ctx, compilingResolver(lookup, compileFlag, compiled), segments);
}

/**
 * Definitions found through `lookup`, compiled once each. Memoised so that a cycle (of
 * prerequisites, of segments) meets the same compiled instance again and is detected.
 */
function compilingResolver<D, C extends { key: string }>(lookup: (key: string) => D | undefined, compile: (definition: D) => C, first?: C): CompiledFlagResolver<C> {
  const seen = new Map<string, C | undefined>(first === undefined ? [] : [[first.key, first]]);
  return {
    get(key) {
      if (seen.has(key)) return seen.get(key);
      const definition = lookup(key);
      const compiled = definition === undefined ? undefined : compile(definition);
      seen.set(key, compiled);
      return compiled;
    },
  };
}
