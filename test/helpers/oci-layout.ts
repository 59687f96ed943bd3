import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** A tar archive (ustar) of regular files, written byte by byte so its digest is stable. */
function tarOf(files: Record<string, string>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, text] of Object.entries(files)) {
    const body = Buffer.from(text);
    const h = Buffer.alloc(512);
    h.write(name, 0, 100, "utf8");
    h.write("0000644\0", 100);
    h.write("0000000\0", 108);
    h.write("0000000\0", 116);
    h.write(`${body.length.toString(8).padStart(11, "0")}\0`, 124);
    h.write("00000000000\0", 136);
    h.write("        ", 148);
    h.write("0", 156);
    h.write("ustar\0", 257);
    h.write("00", 263);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
    blocks.push(h, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** An image written as an OCI image layout: where it is and its manifest's digest. */
export interface OciImage {
  /** `oci:<dir>:<tag>` for skopeo. */
  ref: string;
  dir: string;
  digest: string;
}

/**
 * Write a minimal OCI image layout into `dir`: one uncompressed layer holding `files`, an
 * image config, a manifest and an index naming it `tag`.
 */
export async function writeOciImage(
  dir: string,
  tag: string,
  files: Record<string, string>,
): Promise<OciImage> {
  const blobs = join(dir, "blobs", "sha256");
  await mkdir(blobs, { recursive: true });
  const put = async (b: Buffer) => {
    const hex = sha256(b);
    await writeFile(join(blobs, hex), b);
    return { digest: `sha256:${hex}`, size: b.length };
  };
  const layer = tarOf(files);
  const layerBlob = await put(layer);
  const config = await put(
    Buffer.from(
      JSON.stringify({
        architecture: "amd64",
        os: "linux",
        config: {},
        rootfs: { type: "layers", diff_ids: [layerBlob.digest] },
      }),
    ),
  );
  const manifest = await put(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
        layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar", ...layerBlob }],
      }),
    ),
  );
  await writeFile(join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  await writeFile(
    join(dir, "index.json"),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: "application/vnd.oci.image.manifest.v1+json",
          ...manifest,
          annotations: { "org.opencontainers.image.ref.name": tag },
        },
      ],
    }),
  );
  return { ref: `oci:${dir}:${tag}`, dir, digest: manifest.digest };
}
