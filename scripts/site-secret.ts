/**
 * `npm run site-secret -- put|remove|check NAMESPACE NAME [--username USER --password-file FILE]`:
 * the BMC credentials of a site that holds them itself (`"secrets": "site"` in
 * METALFLOW_SITES_FILE, docs/sites.md), written into the site worker's own
 * store in API mode: METALFLOW_SITE_SECRET_DIR, its key METALFLOW_SITE_SECRET_KEY
 * or METALFLOW_SITE_SECRET_KEY_FILE (default `<dir>.key`, created on first use),
 * the settings the site worker reads. Run it where the site worker runs. The
 * password comes from a file (`-` is standard input), never the command line,
 * which other users' `ps` shows; nothing prints it. (Kubernetes mode: a Secret in
 * the site's cluster, `kubectl create secret generic NAME -n NAMESPACE
 * --from-literal=username=… --from-file=password=FILE`.)
 */
import { readFileSync } from 'node:fs';
import { LocalSecretStore, loadSecretKey } from '../clients/secrets/local-store';
import { siteSecretDirSettings } from '../config/site-secret-dir';

const USAGE = 'usage: npm run site-secret -- put NAMESPACE NAME --username USER --password-file FILE|-   |   remove NAMESPACE NAME   |   check NAMESPACE NAME';

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined || (v.startsWith('--') && v !== '-')) throw new Error(`${name} needs a value; ${USAGE}`);
  return v;
}

export async function siteSecretCommand(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<void> {
  const [verb, namespace, name, ...rest] = argv;
  if (!verb || !namespace || !name || !['put', 'remove', 'check'].includes(verb)) throw new Error(USAGE);
  const s = siteSecretDirSettings(undefined, env);
  const store = new LocalSecretStore(s.dir, loadSecretKey({ ...(s.key ? { key: s.key } : {}), keyFile: s.keyFile, createIfMissing: verb === 'put' }));
  if (verb === 'check') {
    const data = await store.read(namespace, name);
    if (!data) throw new Error(`Secret ${namespace}/${name} is not in the site's store ${s.dir}`);
    const keys = ['username', 'password'].filter((k) => !data[k]);
    if (keys.length > 0) throw new Error(`Secret ${namespace}/${name} in ${s.dir} has no non-empty ${keys.join(' or ')}`);
    out(`Secret ${namespace}/${name} is in the site's store ${s.dir} with a username and a password`);
    return;
  }
  if (verb === 'remove') {
    await store.remove(namespace, name);
    out(`Secret ${namespace}/${name} removed from the site's store ${s.dir}`);
    return;
  }
  const username = option(rest, '--username');
  const passwordFile = option(rest, '--password-file');
  if (!username || !passwordFile) throw new Error(`put needs --username and --password-file; ${USAGE}`);
  const password = readFileSync(passwordFile === '-' ? 0 : passwordFile, 'utf8').replace(/\r?\n$/, '');
  if (!password) throw new Error(`${passwordFile === '-' ? 'standard input' : passwordFile} holds no password`);
  await store.write(namespace, name, { username, password });
  out(`Secret ${namespace}/${name} written to the site's store ${s.dir} (username ${username})`);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  siteSecretCommand(process.argv.slice(2), process.env, (line) => console.log(line)).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  });
}
