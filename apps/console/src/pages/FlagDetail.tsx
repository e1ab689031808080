import { Link } from 'wouter';
import { formatValue, type Flag, type Rule } from '../api';
import { FlagSwitch } from '../components/FlagSwitch';
import { Playground } from '../components/Playground';
import { Empty, ErrorState, Loading } from '../components/States';
import { useFlag } from '../queries';
import { useSignedIn } from '../session';

function variationName(flag: Flag, id: string): string {
  const v = flag.variations.find((x) => x.id === id);
  return v ? `${v.name} (${formatValue(v.value)})` : `unknown variation ${id}`;
}

function Serves({ flag, rule }: { flag: Flag; rule: Rule }) {
  if (rule.variationId) return <>serves {variationName(flag, rule.variationId)}</>;
  if (!rule.rollout) return <>serves nothing</>;
  const total = rule.rollout.variations.reduce((s, v) => s + v.weight, 0) || 1;
  return <>rolls out {rule.rollout.variations.map((v) => `${Math.round((v.weight / total) * 1000) / 10}% ${variationName(flag, v.variationId)}`).join(', ')}</>;
}

export function FlagDetail({ flagKey }: { flagKey: string }) {
  const { scope, environment } = useSignedIn();
  const q = useFlag(scope, flagKey);
  if (q.isPending) return <Loading what="the flag" />;
  if (q.isError) return <ErrorState error={q.error} onRetry={() => void q.refetch()} />;
  const flag = q.data;
  return (
    <article aria-labelledby="flag-title">
      <p>
        <Link href="/">← All flags</Link>
      </p>
      <div className="page-head">
        <h1 id="flag-title">{flag.name}</h1>
        <FlagSwitch flag={flag} scope={scope} />
      </div>
      <section className="panel" aria-labelledby="settings-title">
        <h2 id="settings-title">Settings</h2>
        <dl className="settings">
          <dt>Key</dt>
          <dd>
            <code>{flag.key}</code>
          </dd>
          <dt>Type</dt>
          <dd>{flag.type}</dd>
          <dt>Default value</dt>
          <dd>
            <code>{formatValue(flag.defaultValue)}</code>
          </dd>
          <dt>Off value in {environment}</dt>
          <dd>
            {/* null: the type's default, which evaluation serves (CONTRACT.md section 5). */}
            <code>{formatValue(flag.offValue ?? (flag.type === 'boolean' ? false : flag.defaultValue))}</code>
            {flag.offValue === null && <span className="muted"> (the default)</span>}
          </dd>
          <dt>Description</dt>
          <dd>{flag.description || '—'}</dd>
          <dt>Tags</dt>
          <dd>{flag.tags.length ? flag.tags.join(', ') : '—'}</dd>
        </dl>
      </section>
      <section className="panel" aria-labelledby="variations-title">
        <h2 id="variations-title">Variations</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Value</th>
              <th scope="col">Fallthrough weight</th>
            </tr>
          </thead>
          <tbody>
            {flag.variations.map((v) => (
              <tr key={v.id}>
                <td>{v.name}</td>
                <td>
                  <code>{formatValue(v.value)}</code>
                </td>
                <td>{v.weight}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section className="panel" aria-labelledby="rules-title">
        <h2 id="rules-title">Targeting in {environment}</h2>
        {flag.warnings.length > 0 && (
          <ul className="warnings" aria-label="Warnings">
            {flag.warnings.map((w) => (
              <li key={w.path}>
                <code>{w.path}</code>: {w.message}
              </li>
            ))}
          </ul>
        )}
        <h3>Individual targets</h3>
        {flag.targets.length === 0 ? (
          <Empty>
            <p>No individual targets.</p>
          </Empty>
        ) : (
          <ul>
            {flag.targets.map((t) => (
              <li key={t.variationId}>
                {variationName(flag, t.variationId)}: {t.values.join(', ')}
              </li>
            ))}
          </ul>
        )}
        <h3>Rules</h3>
        {flag.rules.length === 0 ? (
          <Empty>
            <p>No rules: every context gets the fallthrough.</p>
          </Empty>
        ) : (
          <ol className="rules">
            {flag.rules.map((r) => (
              <li key={r.id}>
                {r.description && <strong>{r.description}: </strong>}
                if{' '}
                {r.clauses.map((c, i) => (
                  <span key={i}>
                    {i > 0 && ' and '}
                    <code>{c.attribute}</code> {c.negate ? 'not ' : ''}
                    {c.op} <code>{c.values.map((v) => JSON.stringify(v)).join(', ')}</code>
                  </span>
                ))}{' '}
                <Serves flag={flag} rule={r} />
              </li>
            ))}
          </ol>
        )}
        <h3>Prerequisites</h3>
        {flag.prerequisites.length === 0 ? (
          <Empty>
            <p>No prerequisites.</p>
          </Empty>
        ) : (
          <ul>
            {flag.prerequisites.map((p) => (
              <li key={p.key}>
                <code>{p.key}</code> serves {p.variationId}
              </li>
            ))}
          </ul>
        )}
      </section>
      <Playground flag={flag} scope={scope} />
    </article>
  );
}
