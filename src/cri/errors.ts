import { KubeletError } from '../lib/errors.js';

/** The runtime said the object does not exist (gRPC NOT_FOUND). Callers usually treat this as "already gone". */
export class CriNotFoundError extends KubeletError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CRI_NOT_FOUND', message, options);
    this.name = 'CriNotFoundError';
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof CriNotFoundError;
}
