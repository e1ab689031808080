import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const AuthProblems = registerProblemTypes({
  'invalid-token': { status: HttpStatus.UNAUTHORIZED, title: 'Invalid or expired token' },
  'not-signed-up': { status: HttpStatus.UNAUTHORIZED, title: 'Not signed up' },
  'provider-mismatch': { status: HttpStatus.UNAUTHORIZED, title: 'Sign-in provider does not match the token' },
  'user-not-found': { status: HttpStatus.NOT_FOUND, title: 'User not found' },
  'already-signed-up': { status: HttpStatus.CONFLICT, title: 'Already signed up' },
  'tenant-header-required': { status: HttpStatus.BAD_REQUEST, title: 'X-Tenant-ID header required' },
  'tenant-access-denied': { status: HttpStatus.FORBIDDEN, title: 'No access to this tenant' },
  'tenant-not-found': { status: HttpStatus.NOT_FOUND, title: 'Tenant not found' },
  'role-required': { status: HttpStatus.FORBIDDEN, title: 'Role too weak for this action' },
  'insufficient-scope': { status: HttpStatus.FORBIDDEN, title: 'Token lacks a required scope' },
  'users-only': { status: HttpStatus.FORBIDDEN, title: 'Only signed-in users may do this' },
  'sandbox-expired': { status: HttpStatus.FORBIDDEN, title: 'Sandbox expired' },
  'platform-admin-required': { status: HttpStatus.FORBIDDEN, title: 'Platform admins only' },
  'email-not-verified': { status: HttpStatus.FORBIDDEN, title: 'E-mail address not verified' },
});

export const BEARER_CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="flagship"' };
export const INVALID_TOKEN_CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="flagship", error="invalid_token"' };
