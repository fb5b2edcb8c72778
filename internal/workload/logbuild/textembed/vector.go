package textembed

import (
	"math"
	"sort"
)

// Vector is a sparse vector: Idx holds the indices of its non-zero
// entries in increasing order, Val their values. A dense vector of
// dimension d has Idx 0..d-1.
type Vector struct {
	Idx []int32
	Val []float64
}

// Dense returns v as a sparse Vector holding every entry (zeros included).
func Dense(v []float64) Vector {
	idx := make([]int32, len(v))
	for i := range idx {
		idx[i] = int32(i)
	}
	return Vector{Idx: idx, Val: append([]float64(nil), v...)}
}

// Len is the number of stored entries.
func (v Vector) Len() int { return len(v.Idx) }

// Norm2 is the squared Euclidean norm of v.
func (v Vector) Norm2() float64 {
	s := 0.0
	for _, x := range v.Val {
		s += x * x
	}
	return s
}

// Dot is the dot product of two sparse vectors.
func (v Vector) Dot(w Vector) float64 {
	s := 0.0
	i, j := 0, 0
	for i < len(v.Idx) && j < len(w.Idx) {
		switch {
		case v.Idx[i] < w.Idx[j]:
			i++
		case v.Idx[i] > w.Idx[j]:
			j++
		default:
			s += v.Val[i] * w.Val[j]
			i++
			j++
		}
	}
	return s
}

// DotDense is the dot product of v with a dense vector d, which must be
// longer than v's largest index.
func (v Vector) DotDense(d []float64) float64 {
	s := 0.0
	for k, i := range v.Idx {
		s += v.Val[k] * d[i]
	}
	return s
}

// AddTo adds a·v to the dense vector d.
func (v Vector) AddTo(d []float64, a float64) {
	for k, i := range v.Idx {
		d[i] += a * v.Val[k]
	}
}

// normalize scales v in place to unit Euclidean norm; a zero vector
// becomes empty.
func normalize(v Vector) Vector {
	n := math.Sqrt(v.Norm2())
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return Vector{}
	}
	for k := range v.Val {
		v.Val[k] /= n
	}
	return v
}

// fromMap builds a sorted sparse vector from index → value, dropping zeros.
func fromMap(m map[int32]float64) Vector {
	v := Vector{Idx: make([]int32, 0, len(m)), Val: make([]float64, 0, len(m))}
	for i, x := range m {
		if x != 0 {
			v.Idx = append(v.Idx, i)
		}
	}
	sort.Slice(v.Idx, func(a, b int) bool { return v.Idx[a] < v.Idx[b] })
	for _, i := range v.Idx {
		v.Val = append(v.Val, m[i])
	}
	return v
}
