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
