import type { ReactNode } from 'react';
import { Button, FieldError, Form, Input, Label, TextField } from 'react-aria-components';
import { isApiError } from '../api';
import { ErrorState } from './States';

/** What MutationForm needs of a TanStack Query mutation. */
interface FormMutation {
  mutate: () => void;
  isPending: boolean;
  error: unknown;
}

/**
 * A form that runs one API mutation: the API's 422 field errors land on the fields of the same
 * name, the submit button is off while it runs (or while the tenant is read-only), and any other
 * problem is shown under the form with its request id.
 */
export function MutationForm({
  label,
  mutation,
  submit,
  disabled = false,
  className,
  actions,
  children,
}: {
  label: string;
  mutation: FormMutation;
  submit: string;
  disabled?: boolean;
  className?: string;
  /** More buttons beside the submit one (Cancel). */
  actions?: ReactNode;
  children: ReactNode;
}) {
  return (
    <>
      <Form
        className={className}
        aria-label={label}
        validationErrors={isApiError(mutation.error) ? mutation.error.fieldErrors : undefined}
        onSubmit={(e) => {
          e.preventDefault();
          mutation.mutate();
        }}
      >
        {children}
        <div className="actions">
          <Button type="submit" className="primary" isDisabled={mutation.isPending || disabled}>
            {submit}
          </Button>
          {actions}
        </div>
      </Form>
      {mutation.error ? <ErrorState error={mutation.error} /> : null}
    </>
  );
}

/** A labelled text field with its validation message (`name` matches the API's field for its 422s). */
export function TextInput({
  label,
  name,
  value,
  onChange,
  type,
  isRequired = true,
  isDisabled,
  validate,
}: {
  label: string;
  name: string;
  value: string;
  onChange: (v: string) => void;
  type?: 'text' | 'email';
  isRequired?: boolean;
  isDisabled?: boolean;
  validate?: (v: string) => string | null;
}) {
  return (
    <TextField name={name} type={type} isRequired={isRequired} value={value} onChange={onChange} isDisabled={isDisabled} validate={validate}>
      <Label>{label}</Label>
      <Input />
      <FieldError />
    </TextField>
  );
}
