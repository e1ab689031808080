import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { static as serveStatic } from 'express';

/** Where the console is served: same origin as the API, so no CORS and no token in a URL. */
export const CONSOLE_PATH = '/console';
/** The console's route that receives the identity provider's answer (code and state) in oidc mode. */
export const CONSOLE_CALLBACK_PATH = `${CONSOLE_PATH}/auth/callback`;

/**
 * The console loads only its own files and talks only to this origin. React sets styles through the
 * CSSOM, which style-src does not govern, so no 'unsafe-inline' is needed anywhere. The one inline
 * <style> is react-aria's (usePress: `touch-action` for pressable elements), allowed by its hash; the
 * console's browser test fails on any CSP violation, so a library update that changes it is seen.
 */
const REACT_ARIA_PRESS_STYLE = "'sha256-38RhXrc7EdReTKsOm23ZPOCUgniTUUcjky8QOOrQx6o='";

/**
 * The policy, with the origins the console may call besides its own: in oidc mode the identity
 * provider's (discovery and the token endpoint are called from the browser), and no other.
 */
export const consoleCsp = (connectOrigins: readonly string[] = []): string => [
  "default-src 'none'",
  "script-src 'self'",
  `style-src 'self' ${REACT_ARIA_PRESS_STYLE}`,
  "img-src 'self' data:",
  "font-src 'self'",
  ["connect-src 'self'", ...connectOrigins].join(' '),
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

export const CONSOLE_CSP = consoleCsp();

function securityHeaders(res: Response, csp: string): void {
  res.setHeader('Content-Security-Policy', csp);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
}

/**
 * Serves the built console (`nx run console:build`) at /console: hashed files under assets/ are
 * immutable for a year; index.html is revalidated every time so a deploy is seen at once; any other
 * GET under /console that names no file is a client route and gets index.html.
 */
export function installConsole(app: INestApplication, dir: string, connectOrigins: readonly string[] = []): void {
  const csp = consoleCsp(connectOrigins);
  const root = resolve(dir);
  const index = join(root, 'index.html');
  const files = serveStatic(root, {
    index: false,
    redirect: false,
    fallthrough: true,
    dotfiles: 'ignore',
    setHeaders: (res: Response, path: string) => {
      securityHeaders(res, csp);
      res.setHeader('Cache-Control', path.startsWith(join(root, 'assets')) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
  const sendIndex = (res: Response, next: NextFunction) => {
    if (!existsSync(index)) return next();
    securityHeaders(res, csp);
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(index, (err) => err && next(err));
  };
  app.use(CONSOLE_PATH, (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    // `/console` itself: the relative asset URLs of index.html need the trailing slash.
    if (req.originalUrl === CONSOLE_PATH || req.originalUrl.startsWith(`${CONSOLE_PATH}?`)) return res.redirect(301, `${CONSOLE_PATH}/`);
    if (req.path === '/' || req.path === '/index.html') return sendIndex(res, next);
    files(req, res, () => {
      // A missing hashed asset is a 404 (an old tab after a deploy), never index.html served as JavaScript.
      if (req.path.startsWith('/assets/') || /\.[a-z0-9]+$/i.test(req.path)) return next();
      sendIndex(res, next);
    });
  });
}
