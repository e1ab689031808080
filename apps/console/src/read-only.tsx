import { createContext, useContext } from 'react';

/**
 * Whether the active tenant is read-only (an expired sandbox: the API refuses its writes with
 * /problems/sandbox-expired). Pages disable their write controls from it rather than let the user
 * fill a form the API will refuse.
 */
export const ReadOnlyContext = createContext<string | null>(null);

/** The reason the tenant is read-only, or null when it is writable. */
export const useReadOnly = (): string | null => useContext(ReadOnlyContext);
