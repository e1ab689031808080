import { startTransition, useEffect, useMemo, useState } from 'react';
import { Input, Label, SearchField } from 'react-aria-components';
import { Link } from 'wouter';
import { type Flag, formatValue } from '../api';
import { ChoiceSelect } from '../components/ChoiceSelect';
import { FlagSwitch } from '../components/FlagSwitch';
import { Empty, ErrorState, Loading } from '../components/States';
import { type FlagLifecycle, useFlagKeysIn, useFlags } from '../queries';
import { timeAgo } from '../relative-time';
import { useSignedIn } from '../session';
import { useReadOnly } from '../read-only';

/** Rows rendered at once; the rest follow in interruptible transitions, so a long list never freezes the page. */
const FIRST_ROWS = 60;
const MORE_ROWS = 120;
/** The tag filter's "no filter" choice (a key no tag can be: tags are trimmed). */
const ALL_TAGS = ' all';
/** The lifecycle filter's "no filter" choice. */
const ALL = 'all';
const LIFECYCLES = [
  { id: ALL, name: 'All flags' },
  { id: 'stale', name: 'Stale' },
  { id: 'active', name: 'Active' },
] as const;
const DAY_CHOICES = ['7', '14', '30', '60', '90'] as const;

/**
 * How many of `total` rows to render now: the first at once, then more after each paint. Another
 * filter (`filter` changes) starts again from the first rows, so widening a filter back to 1,000 rows
 * never commits them in one go; a change of the data (a switch flipped) keeps what is shown.
 */
function useProgressiveCount(total: number, filter: string): number {
  const [state, setState] = useState({ filter, count: FIRST_ROWS });
  const count = state.filter === filter ? state.count : FIRST_ROWS;
  if (state.filter !== filter) setState({ filter, count: FIRST_ROWS });
  useEffect(() => {
    if (count >= total) return;
    const t = setTimeout(() => startTransition(() => setState((s) => (s.filter === filter ? { filter, count: s.count + MORE_ROWS } : s))), 0);
    return () => clearTimeout(t);
  }, [count, total, filter]);
  return Math.min(count, total);
}

export function Flags() {
  const { scope, environment } = useSignedIn();
  const flags = useFlags(scope);
  const [search, setSearch] = useState('');
  const [tag, setTag] = useState(ALL_TAGS);
  const [lifecycle, setLifecycle] = useState<FlagLifecycle | typeof ALL>(ALL);
  const [days, setDays] = useState<(typeof DAY_CHOICES)[number]>('30');
  const inLifecycle = useFlagKeysIn(scope, lifecycle === ALL ? null : lifecycle, Number(days));
  const tags = useMemo(() => [...new Set((flags.data ?? []).flatMap((f) => f.tags))].sort((a, b) => a.localeCompare(b)), [flags.data]);
  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    if (!flags.data) return [];
    if (lifecycle !== ALL && !inLifecycle.data) return [];
    const kept = lifecycle === ALL || !inLifecycle.data ? flags.data : flags.data.filter((f) => inLifecycle.data.has(f.key));
    const tagged = tag === ALL_TAGS ? kept : kept.filter((f) => f.tags.includes(tag));
    if (q === '') return tagged;
    return tagged.filter((f) => f.key.toLowerCase().includes(q) || f.name.toLowerCase().includes(q) || f.tags.some((t) => t.toLowerCase().includes(q)));
  }, [flags.data, search, tag, lifecycle, inLifecycle.data]);
  const rendered = useProgressiveCount(shown.length, `${tag}\n${search}\n${lifecycle}\n${days}`);
  // An expired sandbox: flags can be searched and read, not switched or created.
  const readOnly = useReadOnly();

  return (
    <section aria-labelledby="flags-title">
      <div className="page-head">
        <h1 id="flags-title">Flags in {environment}</h1>
        {readOnly === null && (
          <Link href="/flags/new" className="button primary">
            Create flag
          </Link>
        )}
      </div>
      <div className="filters">
        <SearchField value={search} onChange={setSearch} className="react-aria-SearchField search">
          <Label>Search flags</Label>
          <Input placeholder="key, name or tag" />
        </SearchField>
        <ChoiceSelect label="Tag" value={tag} options={[{ id: ALL_TAGS, name: 'All tags' }, ...tags.map((t) => ({ id: t, name: t }))]} onChange={(t) => startTransition(() => setTag(t))} />
        <ChoiceSelect label="Lifecycle" value={lifecycle} options={LIFECYCLES} onChange={(l) => startTransition(() => setLifecycle(l))} />
        {lifecycle !== ALL && (
          <ChoiceSelect label="Over" value={days} options={DAY_CHOICES.map((d) => ({ id: d, name: `${d} days` }))} onChange={(d) => startTransition(() => setDays(d))} />
        )}
      </div>
      {lifecycle === 'stale' && (
        <p className="muted" data-testid="lifecycle-note">
          Stale: not evaluated in {environment} for {days} days (a newer flag counts from its creation), or serving one value to everyone for that long.
          Candidates to remove from your code.
        </p>
      )}
      {lifecycle === 'active' && (
        <p className="muted" data-testid="lifecycle-note">
          Active: evaluated in {environment} in the last {days} days (or newer than that), and not serving one value to everyone for that long.
        </p>
      )}
      {inLifecycle.isError && <ErrorState error={inLifecycle.error} onRetry={() => void inLifecycle.refetch()} />}
      {(flags.isPending || (lifecycle !== ALL && inLifecycle.isPending)) && <Loading what="flags" />}
      {flags.isError && <ErrorState error={flags.error} onRetry={() => void flags.refetch()} />}
      {flags.isSuccess && flags.data.length === 0 && (
        <Empty>
          <p>No flags yet in this tenant.</p>
          <Link href="/flags/new">Create your first flag</Link>
        </Empty>
      )}
      {flags.isSuccess && flags.data.length > 0 && shown.length === 0 && (
        <Empty>
          <p>
            No {lifecycle === ALL ? '' : `${lifecycle} `}flag matches{search.trim() !== '' && ` “${search}”`}
            {tag !== ALL_TAGS && ` with tag “${tag}”`}.
          </p>
        </Empty>
      )}
      {shown.length > 0 && (
        <table className="flags">
          <caption className="visually-hidden">Flags in {environment}</caption>
          <thead>
            <tr>
              <th scope="col">Flag</th>
              <th scope="col">Type</th>
              <th scope="col">Default</th>
              <th scope="col">Tags</th>
              <th scope="col">Last evaluated</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {shown.slice(0, rendered).map((f) => (
              <tr key={f.key}>
                <td>
                  <Link href={`/flags/${encodeURIComponent(f.key)}`}>{f.name}</Link>
                  <div className="muted">
                    <code>{f.key}</code>
                    {clientSideNote(f)}
                  </div>
                </td>
                <td>{f.type}</td>
                <td>
                  <code>{formatValue(f.defaultValue)}</code>
                </td>
                <td>{f.tags.join(', ')}</td>
                <td>
                  <LastEvaluated flag={f} />
                </td>
                <td>
                  <FlagSwitch flag={f} scope={scope} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {rendered < shown.length && (
        <p className="state" role="status">
          Showing {rendered} of {shown.length} flags…
        </p>
      )}
    </section>
  );
}

/** Which client-side keys evaluate the flag, said in the list so a flag exposed to browsers stands out. */
function clientSideNote(f: Flag): string | null {
  const kinds = [f.clientSideAvailability.usingEnvironmentId && 'browser', f.clientSideAvailability.usingMobileKey && 'mobile'].filter(Boolean);
  return kinds.length === 0 ? null : ` · client-side: ${kinds.join(', ')}`;
}

/** When the flag was last evaluated in this environment (by the API or OFREP; noted once a minute), and since when it serves one value. */
function LastEvaluated({ flag }: { flag: Flag }) {
  return (
    <>
      {flag.lastEvaluatedAt ? <time dateTime={flag.lastEvaluatedAt} title={new Date(flag.lastEvaluatedAt).toLocaleString()}>{timeAgo(flag.lastEvaluatedAt)}</time> : 'never'}
      {flag.servingOneVariationSince && (
        <div className="muted">
          one value since <time dateTime={flag.servingOneVariationSince}>{timeAgo(flag.servingOneVariationSince)}</time>
        </div>
      )}
    </>
  );
}
