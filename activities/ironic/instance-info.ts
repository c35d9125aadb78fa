/**
 * What a deploy writes on the Ironic node before `active`, as Metal3 writes
 * it (BMO `pkg/provisioner/ironic/ironic.go`, getInstanceUpdateOpts): the
 * image keys of instance_info, and the deploy interface the kind of deploy
 * needs. Pure.
 *
 * - a disk image (`direct`, or the hardware type's default): image_source,
 *   its format when given (unset: Ironic detects it), its checksum, and for an
 *   `oci://` image the registry credentials as image_pull_secret;
 * - `live-iso`: Ironic's `ramdisk` deploy interface booting `boot_iso`,
 *   nothing written to disk and no config drive;
 * - `customDeploy.method`: the `custom-agent` deploy interface, whose deploy
 *   step `method` the agent runs; the image, when given, goes along.
 *
 * Keys an earlier deploy left that this one does not set are removed, and a
 * node left on `ramdisk` or `custom-agent` goes back to Ironic's default
 * deploy interface for its hardware type.
 */
import type { Image } from '../../model/host';
import type { JsonPatchOp } from '../../clients/ironic/client';

/** The instance_info keys a deploy sets; any of them this deploy does not set is removed. */
const IMAGE_KEYS = [
  'image_source',
  'image_disk_format',
  'image_checksum',
  'image_os_hash_algo',
  'image_os_hash_value',
  'image_pull_secret',
  'boot_iso',
] as const;

/** Metal3's priority for the custom deploy step. */
const CUSTOM_DEPLOY_PRIORITY = 80;

/** The deploy interfaces a deploy itself chooses; any other one is registration's (or a test's) to keep. */
const DEPLOY_CHOSEN = ['ramdisk', 'custom-agent'];

/** The node's deploy interface was chosen by a deploy (live-iso, custom deploy): registration leaves it. */
export const deployChosenInterface = (current: unknown): boolean => typeof current === 'string' && DEPLOY_CHOSEN.includes(current);

export interface DeployKind {
  /** `customDeploy.method`, when the spec has one. */
  customDeploy?: string;
  /** `user:password` for an oci:// image's registry. */
  pullSecret?: string;
}

export const isLiveIso = (image: Image | undefined, kind: DeployKind = {}): boolean => !kind.customDeploy && image?.format === 'live-iso';

function imageKeys(image: Image | undefined, kind: DeployKind): Partial<Record<(typeof IMAGE_KEYS)[number], string>> {
  if (!image) return {};
  if (isLiveIso(image, kind)) return { boot_iso: image.url };
  const want: Partial<Record<(typeof IMAGE_KEYS)[number], string>> = { image_source: image.url };
  if (image.format && image.format !== 'live-iso') want.image_disk_format = image.format;
  if (kind.pullSecret) want.image_pull_secret = kind.pullSecret;
  const checksum = image.checksum;
  const given = image.checksumType && image.checksumType !== 'auto' ? image.checksumType : undefined;
  if (checksum && /^https?:\/\//i.test(checksum)) {
    // The agent reads the checksum file; a given algorithm goes with it, as Metal3 sends it.
    if (given) Object.assign(want, { image_os_hash_algo: given, image_os_hash_value: checksum });
    else want.image_checksum = checksum;
  } else if (checksum) {
    const algo = given ?? ({ 32: 'md5', 64: 'sha256', 128: 'sha512' } as Record<number, string>)[checksum.length];
    Object.assign(want, { image_os_hash_algo: algo, image_os_hash_value: checksum.toLowerCase() });
  }
  return want;
}

/**
 * The image as Ironic's instance_info wants it, as Metal3 writes it: an unset
 * format is left for Ironic to detect from the image; a checksum with its
 * algorithm (given, or a digest's length) goes to image_os_hash_*, a
 * checksum-file URL too when its checksumType is given, else to
 * image_checksum. Keys left from an earlier image (`current`) that this one
 * does not set are removed; keys `current` already has as wanted are left.
 */
export function instanceInfo(image: Image | undefined, current: Record<string, unknown> = {}, kind: DeployKind = {}): JsonPatchOp[] {
  const want = imageKeys(image, kind);
  const ops: JsonPatchOp[] = [];
  for (const key of IMAGE_KEYS) {
    const value = want[key];
    // What the node already has is not written again (a deploy's PATCH then carries only its sent marker, or nothing).
    if (value !== undefined) {
      if ((current ?? {})[key] !== value) ops.push({ op: 'add', path: `/instance_info/${key}`, value });
    } else if (key in (current ?? {})) ops.push({ op: 'remove', path: `/instance_info/${key}` });
  }
  return ops;
}

/** The deploy interface this deploy needs, against the node's (`current`). */
export function deployInterfaceOps(image: Image | undefined, current: string | null | undefined, kind: DeployKind = {}): JsonPatchOp[] {
  const want = kind.customDeploy ? 'custom-agent' : isLiveIso(image, kind) ? 'ramdisk' : undefined;
  if (want) return current === want ? [] : [{ op: 'add', path: '/deploy_interface', value: want }];
  // Back to the hardware type's default (BMO sets it to nil): what registration chose for a disk image.
  return deployChosenInterface(current) ? [{ op: 'remove', path: '/deploy_interface' }] : [];
}

/** The deploy_steps of the `active` request: Metal3's one step for a custom deploy. */
export function deploySteps(kind: DeployKind): Record<string, unknown>[] | undefined {
  if (!kind.customDeploy) return undefined;
  return [{ interface: 'deploy', step: kind.customDeploy, args: {}, priority: CUSTOM_DEPLOY_PRIORITY }];
}
