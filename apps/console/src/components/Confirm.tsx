import type { ReactNode } from 'react';
import { Button, Dialog, DialogTrigger, Heading, Modal } from 'react-aria-components';

/** A destructive action behind an alert dialog (react-aria: focus kept inside, Escape cancels). */
export function ConfirmButton({
  label,
  title,
  confirm,
  onConfirm,
  isDisabled,
  children,
}: {
  /** The trigger's accessible name. */
  label: string;
  title: string;
  /** The confirming button's text. */
  confirm: string;
  onConfirm: () => void;
  isDisabled?: boolean;
  /** What the trigger shows. */
  children: ReactNode;
}) {
  return (
    <DialogTrigger>
      <Button aria-label={label} isDisabled={isDisabled}>
        {children}
      </Button>
      <Modal className="modal" isDismissable>
        <Dialog role="alertdialog" className="dialog">
          {({ close }) => (
            <>
              <Heading slot="title">{title}</Heading>
              <div className="actions">
                <Button
                  className="danger"
                  onPress={() => {
                    onConfirm();
                    close();
                  }}
                >
                  {confirm}
                </Button>
                <Button onPress={close}>Cancel</Button>
              </div>
            </>
          )}
        </Dialog>
      </Modal>
    </DialogTrigger>
  );
}
