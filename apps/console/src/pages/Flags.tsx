import { startTransition, useEffect, useMemo, useState } from 'react';
import { Input, Label, SearchField } from 'react-aria-components';
import { Link } from 'wouter';
import { type Flag, formatValue } from '../api';
import { ChoiceSelect } from '../components/ChoiceSelect';
import { FlagSwitch } from '../components/FlagSwitch';
import { Empty, ErrorState, Loading } from '../components/States';
import { useFlags } from '../queries';
import { useSignedIn } from '../session';
import { useReadOnly } from '../read-only';

/** Rows rendered at once; the rest follow in interruptible transitions, so a long list never freezes the page. */
const FIRST_ROWS = 60;
const MORE_ROWS = 120;
/** The tag filter's "no filter" choice (a key no tag can be: tags are trimmed). */
const ALL_TAGS = ' all';

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
  const tags = useMemo(() => [...new Set((flags.data ?? []).flatMap((f) => f.tags))].sort((a, b) => a.localeCompare(b)), [flags.data]);
  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    if (!flags.data) return [];
    const tagged = tag === ALL_TAGS ? flags.data : flags.data.filter((f) => f.tags.includes(tag));
    if (q === '') return tagged;
    return tagged.filter((f) => f.key.toLowerCase().includes(q) || f.name.toLowerCase().includes(q) || f.tags.some((t) => t.toLowerCase().includes(q)));
  }, [flags.data, search, tag]);
  const rendered = useProgressiveCount(shown.length, `${tag}\n${search}`);
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
      </div>
      {flags.isPending && <Loading what="flags" />}
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
            No flag matches{search.trim() !== '' && ` “${search}”`}
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
