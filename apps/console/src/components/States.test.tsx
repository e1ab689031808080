import { render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../api';
import { ErrorState } from './States';

describe('ErrorState', () => {
  it('a 403 names the problem, says a role is missing, and gives the request id', () => {
    render(<ErrorState error={new ApiError(403, 'Forbidden', 'This needs the admin role; you are a viewer.', 'req-403', undefined)} />);
    const alert = screen.getByRole('alert');
    expect(alert).toHaveTextContent('Forbidden');
    expect(alert).toHaveTextContent('This needs the admin role; you are a viewer.');
    expect(alert).toHaveTextContent('Ask an owner or admin of the tenant for the role it needs.');
    expect(alert).toHaveTextContent('req-403');
  });

  it('an unreachable server says so, without a request id', () => {
    render(<ErrorState error={new ApiError(0, 'The server cannot be reached', 'Check your connection and try again.', undefined, undefined)} />);
    const alert = screen.getByRole('alert');
    expect(alert).toHaveTextContent('The server cannot be reached');
    expect(alert).not.toHaveTextContent('Request id');
  });
});
