import { CompiledFlag, compileFlag } from './compile';
import { CompiledSegment, compileSegment } from './segment';
import type { CompiledFlagResolver, EvaluationContext, EvaluationResult, FlagDefinition, SegmentDefinition } from './types';

/** A flag as compiled, as a definition, or as the JSON text of one (compiled on first use). */
type Entry = CompiledFlag | FlagDefinition | string;

/** A flag as the JSON text of its definition (valid and validated), compiled on first use. */
export interface FlagText {
  key: string;
  text: string;
}

/**
 * The flags being served, kept live: changed in place by `apply`, each flag compiled on first use.
 * An evaluation never sees half of an update: a whole new set (a file reload, a first load) is a new
 * LiveFlagSet swapped in with one assignment, and a batch of changes is applied by `apply` in one
 * synchronous call, which no evaluation can interleave with (evaluations are synchronous too, on the
 * same thread). Not a snapshot: a snapshot is a whole copy of the flags at one version (see
 * docs/architecture.md, "Words we use").
 *
 * Not a CompiledFlagSet, for two reasons that show at 100,000 flags (figures in
 * docs/decisions/2026-11-29-flag-evaluation-costs.md). A CompiledFlagSet can only be compiled again
 * from every definition, too slow for a change that must be visible within 100 ms (even copying the
 * Map is, hence `apply` in place). And compiling every flag up front costs more time and memory than
 * the parsed definitions, for flags that may never be asked for. So each flag is
 * compiled on its first evaluation and the compiled form replaces the definition in the Map: an
 * invisible cache, since a definition always compiles to the same behaviour. The evaluator resolves
 * prerequisites through the set (any `get(key)` will do), so they compile the same way.
 */
export class LiveFlagSet implements CompiledFlagResolver<CompiledFlag> {
  /** When the flags last changed (ms since the epoch). */
  private changedAt = Date.now();

  private constructor(private readonly entries: Map<string, Entry>) {}

  /** Later definitions with the same key replace earlier ones (as in CompiledFlagSet). */
  static of(definitions: Iterable<FlagDefinition>): LiveFlagSet {
    const entries = new Map<string, Entry>();
    for (const definition of definitions) entries.set(definition.key, definition);
    return new LiveFlagSet(entries);
  }

  /**
   * Flags kept as their JSON text until first evaluated (a flag file, see readFlagFile): less than
   * half the memory of the parsed definitions (docs/decisions/2026-11-29-flag-evaluation-costs.md). The texts must be valid,
   * validated definitions.
   */
  static ofTexts(flags: Iterable<FlagText>): LiveFlagSet {
    const entries = new Map<string, Entry>();
    for (const flag of flags) entries.set(flag.key, flag.text);
    return new LiveFlagSet(entries);
  }

  /** Puts `changed` (definitions, or their texts) in and takes `removed` out, all at once (see the class comment). */
  apply(changed: Iterable<FlagDefinition | FlagText>, removed: Iterable<string>): void {
    for (const key of removed) this.entries.delete(key);
    for (const flag of changed) this.entries.set(flag.key, 'text' in flag ? flag.text : flag);
    this.changedAt = Date.now();
  }

  get updatedAt(): number {
    return this.changedAt;
  }

  get size(): number {
    return this.entries.size;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The compiled flag, compiling it on first use. */
  get(key: string): CompiledFlag | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || entry instanceof CompiledFlag) return entry;
    const compiled = compileFlag(typeof entry === 'string' ? (JSON.parse(entry) as FlagDefinition) : entry);
    this.entries.set(key, compiled);
    return compiled;
  }

  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /** Every flag, compiled (the bulk evaluation needs them all). */
  *values(): IterableIterator<CompiledFlag> {
    for (const key of this.entries.keys()) {
      const flag = this.get(key);
      if (flag !== undefined) yield flag;
    }
  }

  /**
   * The environment's segments (segmentMatch), compiled when put in: there are few next to flags,
   * and a flag reads them at every evaluation. Kept apart from flags, keys being separate spaces.
   */
  private readonly segmentEntries = new Map<string, CompiledSegment>();
  readonly segments: CompiledFlagResolver<CompiledSegment> = { get: (key) => this.segmentEntries.get(key) };

  /** Puts `changed` segments in and takes `removed` out, all at once (as `apply` for flags). */
  applySegments(changed: Iterable<SegmentDefinition>, removed: Iterable<string>): void {
    for (const key of removed) this.segmentEntries.delete(key);
    for (const segment of changed) this.segmentEntries.set(segment.key, compileSegment(segment));
    this.changedAt = Date.now();
  }

  get segmentCount(): number {
    return this.segmentEntries.size;
  }

  /** Evaluates one flag of this set; prerequisites and segments resolve within the same set. */
  evaluate(flag: CompiledFlag, ctx: EvaluationContext): EvaluationResult {
    return flag.evaluate(ctx, this, this.segments);
  }
}
