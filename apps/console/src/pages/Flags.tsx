import { useMemo, useState } from 'react';
import { Input, Label, SearchField } from 'react-aria-components';
import { Link } from 'wouter';
import { formatValue } from '../api';
import { FlagSwitch } from '../components/FlagSwitch';
import { Empty, ErrorState, Loading } from '../components/States';
import { useFlags } from '../queries';
import { useSignedIn } from '../session';

export function Flags() {
  const { scope, environment } = useSignedIn();
  const flags = useFlags(scope);
  const [search, setSearch] = useState('');
  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    if (!flags.data) return [];
    if (q === '') return flags.data;
    return flags.data.filter((f) => f.key.toLowerCase().includes(q) || f.name.toLowerCase().includes(q) || f.tags.some((t) => t.toLowerCase().includes(q)));
  }, [flags.data, search]);

  return (
    <section aria-labelledby="flags-title">
      <div className="page-head">
        <h1 id="flags-title">Flags in {environment}</h1>
        <Link href="/flags/new" className="button primary">
          Create flag
        </Link>
      </div>
      <SearchField value={search} onChange={setSearch} className="react-aria-SearchField search">
        <Label>Search flags</Label>
        <Input placeholder="key, name or tag" />
      </SearchField>
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
          <p>No flag matches “{search}”.</p>
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
            {shown.map((f) => (
              <tr key={f.key}>
                <td>
                  <Link href={`/flags/${encodeURIComponent(f.key)}`}>{f.name}</Link>
                  <div className="muted">
                    <code>{f.key}</code>
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
    </section>
  );
}
