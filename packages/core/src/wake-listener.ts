/**
 * A listener's handle, shared by the driver contract and the control store.
 *
 * @module
 */
/** A cross-process wake-up listener; closing it releases its connection. */
export interface WakeListener {
  close(): Promise<void>;
}
