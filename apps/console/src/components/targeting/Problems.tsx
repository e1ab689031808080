import type { ValidationProblem } from '@flagship/flag-evaluation';

/** The check's findings for one part of the form: errors (the API would refuse) and warnings (never matches). */
export function Problems({ errors = [], warnings = [], id }: { errors?: readonly ValidationProblem[]; warnings?: readonly ValidationProblem[]; id?: string }) {
  if (errors.length === 0 && warnings.length === 0) return null;
  return (
    <ul className="problems" id={id}>
      {errors.map((p) => (
        <li key={`e-${p.path}-${p.message}`} className="problem-error">
          <strong>Error</strong> <code>{p.path}</code> {p.message}
        </li>
      ))}
      {warnings.map((p) => (
        <li key={`w-${p.path}-${p.message}`} className="problem-warning">
          <strong>Warning</strong> <code>{p.path}</code> {p.message}
        </li>
      ))}
    </ul>
  );
}

/** What the server accepted but says can never match (a flag's or segment's `warnings`), as saved. */
export function SavedWarnings({ what, warnings }: { what: string; warnings: readonly { path: string; message: string }[] }) {
  if (warnings.length === 0) return null;
  return (
    <section className="panel warnings" aria-labelledby="saved-warnings-title">
      <h2 id="saved-warnings-title">Warnings on the saved {what}</h2>
      <ul>
        {warnings.map((w) => (
          <li key={`${w.path}-${w.message}`}>
            <code>{w.path}</code>: {w.message}
          </li>
        ))}
      </ul>
    </section>
  );
}
