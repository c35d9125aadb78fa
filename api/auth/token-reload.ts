/**
 * Rotating a token must not need a restart: the tokens file is read again
 * when it changes (a watch on its folder, so an editor's or `mv`'s
 * replacement counts) and on SIGHUP. A file that does not parse (e.g. caught
 * half-written) leaves the credentials as they were and is logged by line.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { TokenFile } from './token-file';

export interface ReloadLog {
  info(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

export function reloadTokensOnChange(tokens: TokenFile, path: string, log: ReloadLog): () => void {
  const reload = (reason: 'change' | 'SIGHUP'): void => {
    try {
      tokens.adopt(TokenFile.load(path));
      log.info({ file: path, reason, credentials: tokens.size }, 'tokens file read again');
    } catch (err) {
      log.error({ file: path, reason, err: { message: (err as Error).message } }, 'tokens file not taken: the credentials stay as they were');
    }
  };
  const name = basename(path);
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), (_event, file) => {
      if (file === name) reload('change');
    });
  } catch (err) {
    log.error({ file: path, err: { message: (err as Error).message } }, 'cannot watch the tokens file; send SIGHUP after changing it');
  }
  const onHup = (): void => reload('SIGHUP');
  process.on('SIGHUP', onHup);
  return () => {
    watcher?.close();
    process.off('SIGHUP', onHup);
  };
}
