import { Button, Label, ListBox, ListBoxItem, Popover, Select, SelectValue } from 'react-aria-components';

/** A labelled single choice from a short list (react-aria's Select: keyboard, screen reader and focus handled). */
export function ChoiceSelect<K extends string>({
  label,
  value,
  options,
  onChange,
  className,
}: {
  label: string;
  value: K;
  options: readonly { id: K; name: string }[];
  onChange: (k: K) => void;
  className?: string;
}) {
  return (
    <Select selectedKey={value} onSelectionChange={(k) => k !== null && onChange(k as K)} className={className ?? 'select'}>
      <Label>{label}</Label>
      <Button>
        <SelectValue />
        <span aria-hidden="true"> ▾</span>
      </Button>
      <Popover>
        <ListBox items={options}>{(o) => <ListBoxItem id={o.id}>{o.name}</ListBoxItem>}</ListBox>
      </Popover>
    </Select>
  );
}
