import { useState } from 'react';
import { Button, Checkbox, CheckboxGroup, FieldError, Input, Label, Radio, RadioGroup, Text, TextArea, TextField } from 'react-aria-components';
import { formatValue, USER_KIND, type Flag, type FlagVariation, type JsonValue, type Prerequisite, type Target } from '../../api';
import { parseDefault } from '../../pages/CreateFlag';
import { ChoiceSelect } from '../ChoiceSelect';
import { problemsAt, type DraftCheck } from './checks';
import { ContextKindField } from './ContextKindField';
import type { FlagDraft } from './draft';
import { sameJson } from './draft';
import { Problems } from './Problems';
import { RolloutEditor } from './RolloutEditor';
import { variationLabel } from './RuleEditor';
import { evenWeights, WEIGHT_TOTAL } from './weights';

type Update = (patch: Partial<FlagDraft>) => void;
/** Reports a field whose text does not parse (message) or parses again (null); the editor will not save meanwhile. */
export type Invalid = (field: string, message: string | null) => void;

const valueText = (v: JsonValue): string => (typeof v === 'string' ? v : JSON.stringify(v, null, 1));

/** A value of the flag's type typed as text (booleans as a choice), checked as the create form checks it. */
function TypedValue({ flag, label, value, onChange, invalid, field }: { flag: Flag; label: string; value: JsonValue; onChange: (v: JsonValue) => void; invalid: Invalid; field: string }) {
  const [text, setText] = useState(() => valueText(value));
  const [error, setError] = useState<string | null>(null);
  if (flag.type === 'boolean') {
    return (
      <RadioGroup value={String(value)} onChange={(v) => onChange(v === 'true')} orientation="horizontal">
        <Label>{label}</Label>
        <Radio value="true">true</Radio>
        <Radio value="false">false</Radio>
      </RadioGroup>
    );
  }
  return (
    <TextField
      value={text}
      isInvalid={error !== null}
      onChange={(t) => {
        setText(t);
        const p = parseDefault(flag.type, t, false);
        const message = 'error' in p ? p.error : null;
        setError(message);
        invalid(field, message);
        if ('value' in p) onChange(p.value);
      }}
    >
      <Label>{label}</Label>
      {flag.type === 'json' ? <TextArea rows={3} className="react-aria-TextArea code" /> : <Input />}
      <FieldError>{error}</FieldError>
    </TextField>
  );
}

export function SettingsSection({ flag, draft, update, invalid }: { flag: Flag; draft: FlagDraft; update: Update; invalid: Invalid }) {
  const [tags, setTags] = useState(() => draft.tags.join(', '));
  return (
    <section className="panel" aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <p className="muted">
        Key <code>{flag.key}</code>, type {flag.type}. Settings and variations apply in every environment.
      </p>
      <div className="form-grid">
        <TextField value={draft.name} onChange={(name) => update({ name })} isRequired>
          <Label>Name</Label>
          <Input />
        </TextField>
        <TypedValue flag={flag} label="Default value" field="defaultValue" value={draft.defaultValue} onChange={(defaultValue) => update({ defaultValue })} invalid={invalid} />
        <TextField value={draft.description} onChange={(description) => update({ description })}>
          <Label>Description</Label>
          <TextArea rows={2} />
        </TextField>
        <TextField
          value={tags}
          onChange={(t) => {
            setTags(t);
            update({ tags: t.split(',').map((x) => x.trim()).filter((x) => x !== '') });
          }}
        >
          <Label>Tags (comma-separated)</Label>
          <Input />
        </TextField>
      </div>
      <ClientSideAvailabilityField value={draft.clientSideAvailability} onChange={(clientSideAvailability) => update({ clientSideAvailability })} />
    </section>
  );
}

/**
 * Which of orep-server's client-side keys may evaluate the flag (LaunchDarkly's two checkboxes).
 * Browser and mobile keys are public, so a flag is server-only until it is ticked here.
 */
function ClientSideAvailabilityField({ value, onChange }: { value: Flag['clientSideAvailability']; onChange: (v: Flag['clientSideAvailability']) => void }) {
  const ticked = (['usingEnvironmentId', 'usingMobileKey'] as const).filter((k) => value[k]);
  return (
    <CheckboxGroup
      className="checks client-side"
      value={ticked}
      onChange={(keys) => onChange({ usingEnvironmentId: keys.includes('usingEnvironmentId'), usingMobileKey: keys.includes('usingMobileKey') })}
    >
      <Label>Available to client-side keys</Label>
      <Checkbox value="usingEnvironmentId">
        <span className="box" aria-hidden="true" />
        Browser keys (client-side ID)
      </Checkbox>
      <Checkbox value="usingMobileKey">
        <span className="box" aria-hidden="true" />
        Mobile keys
      </Checkbox>
      <Text slot="description" className="muted">
        {ticked.length === 0
          ? 'Server-only: only the server token evaluates it; a browser or mobile key is told it does not exist.'
          : 'Anyone holding such a key (every visitor of your app) can evaluate it with any context they invent.'}
      </Text>
    </CheckboxGroup>
  );
}

export function VariationsSection({ flag, draft, update, invalid, check }: { flag: Flag; draft: FlagDraft; update: Update; invalid: Invalid; check: DraftCheck }) {
  const set = (i: number, v: FlagVariation) => update({ variations: draft.variations.map((x, k) => (k === i ? v : x)) });
  return (
    <section className="panel" aria-labelledby="variations-title">
      <h2 id="variations-title">Variations</h2>
      <ol className="variations">
        {draft.variations.map((v, i) => (
          <li key={v.id}>
            <fieldset aria-label={`Variation ${i + 1}`}>
              <legend className="visually-hidden">Variation {i + 1}</legend>
              <TextField value={v.name} onChange={(name) => set(i, { ...v, name })} isRequired>
                <Label>Name</Label>
                <Input />
              </TextField>
              {flag.type === 'boolean' ? (
                <p>
                  Value <code>{formatValue(v.value)}</code>
                </p>
              ) : (
                <TypedValue flag={flag} label="Value" field={`variations[${i}]`} value={v.value} onChange={(value) => set(i, { ...v, value })} invalid={invalid} />
              )}
              <TextField value={v.description} onChange={(description) => set(i, { ...v, description })}>
                <Label>Description</Label>
                <Input />
              </TextField>
              {flag.type !== 'boolean' && (
                <Button aria-label={`Remove variation ${v.name || i + 1}`} isDisabled={draft.variations.length <= 1} onPress={() => update({ variations: draft.variations.filter((_, k) => k !== i) })} className="react-aria-Button small danger">
                  Remove
                </Button>
              )}
              <Problems errors={problemsAt(check.errors, `variations[${i}]`)} warnings={problemsAt(check.warnings, `variations[${i}]`)} />
            </fieldset>
          </li>
        ))}
      </ol>
      {flag.type !== 'boolean' && (
        <Button
          onPress={() =>
            update({ variations: [...draft.variations, { id: crypto.randomUUID(), name: `variation ${draft.variations.length + 1}`, value: flag.type === 'number' ? 0 : flag.type === 'json' ? {} : '', description: '', weight: 0 }] })
          }
          className="react-aria-Button small"
        >
          Add variation
        </Button>
      )}
    </section>
  );
}

type FallMode = 'default' | 'variation' | 'rollout';
const modeOf = (weights: number[]): FallMode => {
  const positive = weights.filter((w) => w > 0).length;
  return positive === 0 ? 'default' : positive === 1 ? 'variation' : 'rollout';
};

/** Fallthrough: the variations' weights (all 0: the default value; one: that variation; several: a rollout). */
export function FallthroughSection({ draft, update, environment }: { draft: FlagDraft; update: Update; environment: string }) {
  const weights = draft.variations.map((v) => v.weight);
  const [mode, setMode] = useState<FallMode>(() => modeOf(weights));
  const setWeights = (w: number[]) => update({ variations: draft.variations.map((v, i) => ({ ...v, weight: w[i] ?? 0 })) });
  const one = draft.variations.find((v) => v.weight > 0)?.id ?? draft.variations[0]?.id ?? '';
  return (
    <div className="subsection">
      <h3>Fallthrough</h3>
      <p className="muted">Served when no target or rule matches (in every environment; the variations carry it, not {environment} alone).</p>
      <RadioGroup
        value={mode}
        orientation="horizontal"
        onChange={(v) => {
          const m = v as FallMode;
          setMode(m);
          if (m === 'default') setWeights(weights.map(() => 0));
          else if (m === 'variation') setWeights(draft.variations.map((x) => (x.id === one ? WEIGHT_TOTAL : 0)));
          else setWeights(evenWeights(draft.variations.length));
        }}
      >
        <Label>Fallthrough serves</Label>
        <Radio value="default">The default value</Radio>
        <Radio value="variation">A variation</Radio>
        <Radio value="rollout">A percentage rollout</Radio>
      </RadioGroup>
      {mode === 'variation' && (
        <ChoiceSelect
          label="Fallthrough variation"
          value={one}
          options={draft.variations.map((v) => ({ id: v.id, name: variationLabel(v) }))}
          onChange={(id) => setWeights(draft.variations.map((x) => (x.id === id ? WEIGHT_TOTAL : 0)))}
        />
      )}
      {mode === 'rollout' && <RolloutEditor name="Fallthrough rollout" variations={draft.variations} weights={weights} onChange={setWeights} />}
    </div>
  );
}

const TYPE_DEFAULT = '__type-default__';
const CUSTOM = '__custom__';

export function OffValueSection({ flag, draft, update }: { flag: Flag; draft: FlagDraft; update: Update }) {
  const match = draft.offValue === null ? TYPE_DEFAULT : (draft.variations.find((v) => sameJson(v.value, draft.offValue))?.id ?? CUSTOM);
  const options = [
    { id: TYPE_DEFAULT, name: `The type's default (${flag.type === 'boolean' ? 'false' : formatValue(draft.defaultValue)})` },
    ...draft.variations.map((v) => ({ id: v.id, name: variationLabel(v) })),
    ...(match === CUSTOM ? [{ id: CUSTOM, name: `Another value: ${formatValue(draft.offValue)}` }] : []),
  ];
  return (
    <div className="subsection">
      <h3>Off value</h3>
      <ChoiceSelect
        label="Served when off or a prerequisite fails"
        value={match}
        options={options}
        onChange={(id) => {
          if (id === TYPE_DEFAULT) update({ offValue: null });
          else if (id !== CUSTOM) update({ offValue: draft.variations.find((v) => v.id === id)?.value ?? null });
        }}
      />
    </div>
  );
}

export const splitKeys = (t: string) => [...new Set(t.split(/[\n,]/).map((x) => x.trim()).filter((x) => x !== ''))];

/** A row's Remove button (its accessible name says which row). */
export function RemoveButton({ label, onPress }: { label: string; onPress: () => void }) {
  return (
    <Button aria-label={label} onPress={onPress} className="react-aria-Button small danger">
      Remove
    </Button>
  );
}

/** Context keys typed one per line or comma-separated; `onChange` has the text and the keys it lists. */
export function KeysField({ label, text, description, onChange }: { label: string; text: string; description?: string; onChange: (text: string, keys: string[]) => void }) {
  return (
    <TextField value={text} onChange={(t) => onChange(t, splitKeys(t))}>
      <Label>{label}</Label>
      <TextArea rows={2} className="react-aria-TextArea code" />
      {description && (
        <Text slot="description" className="muted">
          {description}
        </Text>
      )}
    </TextField>
  );
}

const isUserTarget = (t: Target) => t.contextKind === undefined || t.contextKind === USER_KIND;

/**
 * Individual targets: user keys per variation, then targets of other context kinds, each a kind, a
 * variation and its keys (`targets[].contextKind`; LaunchDarkly's contextTargets). Targets are read in
 * order, the first listing a context's key of its kind winning: user targets first, then the others.
 */
export function TargetsSection({ draft, update, check, kinds }: { draft: FlagDraft; update: Update; check: DraftCheck; kinds: readonly string[] }) {
  const keysOf = (id: string) => draft.targets.filter((t) => isUserTarget(t) && t.variationId === id).flatMap((t) => t.values);
  const [texts, setTexts] = useState<Record<string, string>>(() => Object.fromEntries(draft.variations.map((v) => [v.id, keysOf(v.id).join('\n')])));
  const others = draft.targets.filter((t) => !isUserTarget(t));
  const [otherTexts, setOtherTexts] = useState<string[]>(() => others.map((t) => t.values.join('\n')));
  const userTargets = (next: Record<string, string>): Target[] =>
    draft.variations.map((v) => ({ variationId: v.id, values: splitKeys(next[v.id] ?? keysOf(v.id).join('\n')) })).filter((t) => t.values.length > 0);
  const set = (id: string, text: string) => {
    const next = { ...texts, [id]: text };
    setTexts(next);
    update({ targets: [...userTargets(next), ...others] });
  };
  const setOthers = (list: Target[]) => update({ targets: [...userTargets(texts), ...list] });
  const setOther = (i: number, t: Target) => setOthers(others.map((x, k) => (k === i ? t : x)));
  return (
    <div className="subsection">
      <h3>Individual targets</h3>
      <div className="form-grid">
        {draft.variations.map((v) => (
          <KeysField key={v.id} label={`Targets served ${v.name}`} text={texts[v.id] ?? keysOf(v.id).join('\n')} onChange={(t) => set(v.id, t)} description="User keys, one per line or comma-separated." />
        ))}
      </div>
      <h4>Targets of other context kinds</h4>
      {others.length === 0 && <p className="muted">None: add one to serve a variation to organizations, devices or another kind by key.</p>}
      <ol className="kind-targets">
        {others.map((t, i) => (
          <li key={i}>
            <fieldset aria-label={`Kind target ${i + 1}`} className="inline-fields">
              <legend className="visually-hidden">Kind target {i + 1}</legend>
              <ContextKindField label="Context kind" value={t.contextKind ?? USER_KIND} kinds={kinds.filter((k) => k !== USER_KIND)} onChange={(contextKind) => setOther(i, { ...t, contextKind })} />
              <ChoiceSelect label="Serves" value={t.variationId} options={draft.variations.map((v) => ({ id: v.id, name: variationLabel(v) }))} onChange={(variationId) => setOther(i, { ...t, variationId })} />
              <KeysField
                label="Keys"
                text={otherTexts[i] ?? t.values.join('\n')}
                onChange={(text, values) => {
                  setOtherTexts(Object.assign([...otherTexts], { [i]: text }));
                  setOther(i, { ...t, values });
                }}
              />
              <RemoveButton
                label={`Remove kind target ${i + 1}`}
                onPress={() => {
                  setOtherTexts(otherTexts.filter((_, k) => k !== i));
                  setOthers(others.filter((_, k) => k !== i));
                }}
              />
            </fieldset>
          </li>
        ))}
      </ol>
      <Button
        onPress={() => {
          setOtherTexts([...otherTexts, '']);
          setOthers([...others, { contextKind: kinds.find((k) => k !== USER_KIND) ?? 'organization', variationId: draft.variations[0]?.id ?? '', values: [] }]);
        }}
        className="react-aria-Button small"
      >
        Add target of another kind
      </Button>
      <Problems errors={problemsAt(check.errors, 'targets')} warnings={problemsAt(check.warnings, 'targets')} />
    </div>
  );
}

export function PrerequisitesSection({ flag, draft, update, others, check }: { flag: Flag; draft: FlagDraft; update: Update; others: readonly Flag[] | undefined; check: DraftCheck }) {
  const candidates = (others ?? []).filter((f) => f.key !== flag.key);
  const set = (i: number, p: Prerequisite) => update({ prerequisites: draft.prerequisites.map((x, k) => (k === i ? p : x)) });
  return (
    <div className="subsection">
      <h3>Prerequisites</h3>
      {draft.prerequisites.length === 0 && <p className="muted">No prerequisites.</p>}
      <ol>
        {draft.prerequisites.map((p, i) => {
          const other = candidates.find((f) => f.key === p.key);
          return (
            <li key={i}>
              <fieldset aria-label={`Prerequisite ${i + 1}`} className="inline-fields">
                <legend className="visually-hidden">Prerequisite {i + 1}</legend>
                <ChoiceSelect
                  label="Flag"
                  value={p.key}
                  options={[...(other ? [] : [{ id: p.key, name: p.key }]), ...candidates.map((f) => ({ id: f.key, name: `${f.name} (${f.key})` }))]}
                  onChange={(key) => set(i, { key, variationId: candidates.find((f) => f.key === key)?.variations[0]?.id ?? '' })}
                />
                <ChoiceSelect
                  label="Must serve"
                  value={p.variationId}
                  options={(other?.variations ?? [{ id: p.variationId, name: p.variationId, value: null, description: '', weight: 0 }]).map((v) => ({ id: v.id, name: variationLabel(v) }))}
                  onChange={(variationId) => set(i, { ...p, variationId })}
                />
                <RemoveButton label={`Remove prerequisite ${i + 1}`} onPress={() => update({ prerequisites: draft.prerequisites.filter((_, k) => k !== i) })} />
              </fieldset>
            </li>
          );
        })}
      </ol>
      <Button
        isDisabled={candidates.length === 0}
        onPress={() => {
          const f = candidates[0];
          if (f) update({ prerequisites: [...draft.prerequisites, { key: f.key, variationId: f.variations[0]?.id ?? '' }] });
        }}
        className="react-aria-Button small"
      >
        Add prerequisite
      </Button>
      {candidates.length === 0 && <p className="muted">No other flag in this tenant to depend on.</p>}
      <Problems errors={problemsAt(check.errors, 'prerequisites')} warnings={problemsAt(check.warnings, 'prerequisites')} />
    </div>
  );
}
