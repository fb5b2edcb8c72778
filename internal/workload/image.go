package workload

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"github.com/spate-dev/spate/experiment"
	"image"
	"image/color"
	"image/png"
	"math"
	"mime"
	"path/filepath"
	"strings"

	_ "image/gif"  // decode GIF sizes
	_ "image/jpeg" // decode JPEG sizes
)

// imageData is one image to attach: its data URL and size.
type imageData struct {
	url    string
	w, h   int
	key    string  // identifies it in the digest
	weight float64 // the chance it is drawn, relative to the others' (sizes); 0 = uniform
}

// patches is the number of ViT patches the image counts for under w (see
// experiment.Weights): resize, tile or native.
func (im imageData) patches(w experiment.Weights) int {
	return Patches(im.w, im.h, w)
}

// Patches is the number of ViT-style patches a width×height image counts
// for under w's patch size, input size and mode (checked by checkWeights):
// resize makes every image one input of ⌈input/patch⌉² patches (the seed's
// 224×224 → 256 of ViT-L/14); tile cuts it into ⌈W/input⌉·⌈H/input⌉ inputs;
// native counts ⌈W/patch⌉·⌈H/patch⌉ patches of the image as it is.
func Patches(width, height int, w experiment.Weights) int {
	patch, input := w.PatchPixels, w.ImagePixels
	if patch <= 0 {
		patch = DefaultWeights.PatchPixels
	}
	if input <= 0 {
		input = DefaultWeights.ImagePixels
	}
	ceil := func(a, b int) int { return (a + b - 1) / b }
	perInput := ceil(input, patch) * ceil(input, patch)
	switch w.ImageMode {
	case "tile":
		return ceil(width, input) * ceil(height, input) * perInput
	case "native":
		return ceil(width, patch) * ceil(height, patch)
	}
	return perInput
}

// checkWeights reports weights an image cannot be counted with.
func checkWeights(w experiment.Weights) error {
	switch w.ImageMode {
	case "resize", "tile", "native":
	default:
		return fmt.Errorf("weights.imageMode %q: use resize (every image one %d-pixel input), tile or native", w.ImageMode, w.ImagePixels)
	}
	if w.PatchPixels > w.ImagePixels {
		return fmt.Errorf("weights: patchPixels %d is larger than imagePixels %d (ViT-L/14: patchPixels 14, imagePixels 224)", w.PatchPixels, w.ImagePixels)
	}
	return nil
}

// loadImages reads the image files, or makes one synthetic PNG of the
// given size.
func loadImages(ctx context.Context, spec experiment.Images, seed uint64, lim Limits) ([]imageData, error) {
	if spec.Count < 0 {
		return nil, fmt.Errorf("images.count must be >= 0")
	}
	var out []imageData
	for _, f := range spec.Files {
		b, err := readFile(ctx, f, lim)
		if err != nil {
			return nil, fmt.Errorf("images: %w", err)
		}
		cfg, _, err := imageDecodeConfig(b)
		if err != nil {
			return nil, fmt.Errorf("images: %s is not a PNG, JPEG or GIF image: %w", f, err)
		}
		typ := mime.TypeByExtension(strings.ToLower(filepath.Ext(f)))
		if typ == "" {
			typ = "image/png"
		}
		out = append(out, imageData{url: "data:" + typ + ";base64," + base64.StdEncoding.EncodeToString(b), w: cfg.Width, h: cfg.Height, key: digest(b)[:16]})
	}
	if len(out) == 0 && len(spec.Sizes) > 0 {
		for i, sz := range spec.Sizes {
			if sz.Width <= 0 || sz.Height <= 0 || sz.Width*sz.Height > 4096*4096 || !(sz.Weight > 0) || math.IsInf(sz.Weight, 0) {
				return nil, fmt.Errorf("images.sizes[%d]: want width and height > 0 (at most 4096×4096 pixels) and a weight > 0, got %dx%d@%g", i, sz.Width, sz.Height, sz.Weight)
			}
			b := SyntheticPNG(sz.Width, sz.Height, seed+uint64(i))
			out = append(out, imageData{url: "data:image/png;base64," + base64.StdEncoding.EncodeToString(b), w: sz.Width, h: sz.Height,
				key: fmt.Sprintf("synthetic-%dx%d@%g", sz.Width, sz.Height, sz.Weight), weight: sz.Weight})
		}
	}
	if len(out) == 0 {
		if spec.Width <= 0 || spec.Height <= 0 || spec.Width*spec.Height > 4096*4096 {
			return nil, fmt.Errorf("images: give files, or width and height of a synthetic image (each > 0, at most 4096×4096 pixels)")
		}
		b := SyntheticPNG(spec.Width, spec.Height, seed)
		out = append(out, imageData{url: "data:image/png;base64," + base64.StdEncoding.EncodeToString(b), w: spec.Width, h: spec.Height, key: fmt.Sprintf("synthetic-%dx%d", spec.Width, spec.Height)})
	}
	return out, nil
}

func imageDecodeConfig(b []byte) (image.Config, string, error) {
	return image.DecodeConfig(bytes.NewReader(b))
}

// SyntheticPNG is a w×h PNG of seeded 8×8-pixel colour blocks, the same
// for the same seed: it compresses about as well as a photograph does, so
// its size is realistic, and it is cheap to make.
func SyntheticPNG(w, h int, seed uint64) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r := newRand(seed^0x1316, 0)
	const block = 8
	row := make([]color.RGBA, (w+block-1)/block)
	for y := 0; y < h; y++ {
		if y%block == 0 {
			for i := range row {
				v := r.Uint32()
				row[i] = color.RGBA{uint8(v), uint8(v >> 8), uint8(v >> 16), 255}
			}
		}
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, row[x/block])
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // writing to memory cannot fail
	return buf.Bytes()
}
