package workload

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// zetaExactTerms is how many leading terms of zeta are summed exactly before the tail is
// taken from the Euler-Maclaurin formula. At i = 1000 the first omitted correction term
// (of order f^(5)(m)/30240, f(x) = x^-theta) is below 1e-19, far under float64 rounding of
// a sum that is >= 1, so the approximation is exact to the last few ulps while the cost
// stays at ~1000 math.Pow calls whatever NumKeys is (20M keys: microseconds, not seconds).
const zetaExactTerms = 1000

// zeta returns sum_{i=1..n} i^-theta.
func zeta(n int64, theta float64) float64 {
	if n <= 0 {
		return 0
	}
	if n <= zetaExactTerms {
		return zetaDirect(n, theta)
	}
	m := float64(zetaExactTerms)
	sum := zetaDirect(zetaExactTerms-1, theta) // terms 1 .. m-1
	// Euler-Maclaurin for sum_{i=m..n} f(i):
	//   integral_m^n f + (f(m)+f(n))/2 + (f'(n)-f'(m))/12 - (f'''(n)-f'''(m))/720 + R
	nf := float64(n)
	f := func(x float64) float64 { return math.Pow(x, -theta) }
	f1 := func(x float64) float64 { return -theta * math.Pow(x, -theta-1) }
	f3 := func(x float64) float64 { return -theta * (theta + 1) * (theta + 2) * math.Pow(x, -theta-3) }
	var integral float64
	if theta == 1 {
		integral = math.Log(nf / m)
	} else {
		integral = (math.Pow(nf, 1-theta) - math.Pow(m, 1-theta)) / (1 - theta)
	}
	sum += integral + (f(m)+f(nf))/2 + (f1(nf)-f1(m))/12 - (f3(nf)-f3(m))/720
	return sum
}

// zetaDirect sums the series term by term, smallest terms first for accuracy.
func zetaDirect(n int64, theta float64) float64 {
	var sum float64
	for i := n; i >= 1; i-- {
		sum += math.Pow(float64(i), -theta)
	}
	return sum
}

// zipf draws ranks in [0, n) with P(rank = k) proportional to 1/(k+1)^theta. Rank 0 is the
// most popular. It is immutable after construction, so all workers share one.
//
// For theta < 1 it is YCSB's ZipfianGenerator, i.e. the algorithm of Gray et al.,
// "Quickly generating billion-record synthetic databases" (SIGMOD 1994): one uniform draw
// and one math.Pow per sample, with zeta(n, theta) precomputed once. Gray's closed form is
// exact for ranks 0 and 1 and approximates the inverse CDF beyond; it is the distribution
// YCSB results are quoted against, which is why it is used. The formula divides by 1-theta
// and does not describe exponents >= 1, so for theta >= 1 (NDBench's commons-math
// ZipfDistribution accepts them) the exact rejection-inversion sampler of Hörmann and
// Derflinger (1996), the one commons-math uses, is used instead.
type zipf struct {
	n     int64
	theta float64
	// Gray et al. constants (theta < 1).
	zetan, alpha, eta, half float64
	// Rejection-inversion constants (theta >= 1).
	hX1, hN, s float64
}

func newZipf(n int64, theta float64) *zipf {
	z := &zipf{n: n, theta: theta}
	if theta < 1 {
		z.zetan = zeta(n, theta)
		zeta2 := zeta(2, theta)
		z.alpha = 1 / (1 - theta)
		z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/z.zetan)
		z.half = 1 + math.Pow(0.5, theta)
		return z
	}
	z.hX1 = z.hIntegral(1.5) - 1
	z.hN = z.hIntegral(float64(n) + 0.5)
	z.s = 2 - z.hIntegralInv(z.hIntegral(2.5)-z.h(2))
	return z
}

// rank returns a rank in [0, n).
func (z *zipf) rank(r *rand.Rand) int64 {
	if z.n == 1 {
		return 0
	}
	if z.theta < 1 {
		u := r.Float64()
		uz := u * z.zetan
		if uz < 1 {
			return 0
		}
		if uz < z.half {
			return 1
		}
		// exp(alpha*log(b)) rather than math.Pow(b, alpha): alpha = 1/(1-theta) is rarely an
		// integer, and math.Pow then costs an Exp, a Log and a square-and-multiply loop
		// (~60 ns). The relative error, ~|alpha*log b| ulps, is far below one rank.
		k := int64(float64(z.n) * math.Exp(z.alpha*math.Log(z.eta*u-z.eta+1)))
		if k >= z.n { // float rounding at u -> 1
			k = z.n - 1
		}
		return k
	}
	for {
		u := z.hN + r.Float64()*(z.hX1-z.hN)
		x := z.hIntegralInv(u)
		k := int64(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > z.n {
			k = z.n
		}
		if float64(k)-x <= z.s || u >= z.hIntegral(float64(k)+0.5)-z.h(float64(k)) {
			return k - 1
		}
	}
}

// h is the unnormalized density x^-theta of the rejection-inversion sampler.
func (z *zipf) h(x float64) float64 { return math.Exp(-z.theta * math.Log(x)) }

// hIntegral is an antiderivative of h, written to stay accurate as theta -> 1.
func (z *zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return helper2((1-z.theta)*lx) * lx
}

// hIntegralInv inverts hIntegral.
func (z *zipf) hIntegralInv(x float64) float64 {
	t := x * (1 - z.theta)
	if t < -1 {
		t = -1 // rounding guard: log1p(-1) would be -Inf
	}
	return math.Exp(helper1(t) * x)
}

// helper1 is log1p(x)/x, with its series near 0 where the quotient loses precision.
func helper1(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// helper2 is expm1(x)/x, with its series near 0.
func helper2(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x*(1.0/3)*(1+0.25*x))
}

// permutation is a keyed bijection of [0, n): a 4-round Feistel network over the
// smallest power of two >= n, with cycle walking to stay inside [0, n). Scrambled zipfian
// uses it rather than YCSB's "hash(rank) mod n" because a hash mod n merges colliding
// ranks (changing the frequency profile) and leaves some keys unused; a bijection moves
// every rank to a distinct key, so the sorted frequencies stay exactly zipfian. When the
// bit width is odd the halves differ by one bit (each round XORs one half with a keyed
// hash of the other, which is invertible whatever the widths), so the domain is < 2n and
// fewer than 2 walks are needed on average.
type permutation struct {
	n       uint64
	lo      uint      // bits in the low half; the high half has the rest
	loMask  uint64    // (1<<lo)-1
	hiShift uint      // 64 - bits in the high half
	loShift uint      // 64 - lo
	keys    [4]uint64 // round keys
}

func newPermutation(n int64, seed uint64) permutation {
	b := uint(bits.Len64(uint64(n - 1)))
	b = max(b, 2)
	lo := b / 2
	p := permutation{n: uint64(n), lo: lo, loMask: 1<<lo - 1, hiShift: 64 - (b - lo), loShift: 64 - lo}
	s := seed
	for i := range p.keys {
		s += 0x9e3779b97f4a7c15
		p.keys[i] = mix64(s)
	}
	return p
}

// apply maps x in [0, n) to its image in [0, n).
func (p *permutation) apply(x uint64) uint64 {
	for {
		hi, lo := x>>p.lo, x&p.loMask
		hi ^= round(lo, p.keys[0]) >> p.hiShift
		lo ^= round(hi, p.keys[1]) >> p.loShift
		hi ^= round(lo, p.keys[2]) >> p.hiShift
		lo ^= round(hi, p.keys[3]) >> p.loShift
		x = hi<<p.lo | lo
		if x < p.n {
			return x
		}
	}
}

// round is the Feistel round function: a keyed multiply whose top bits (which depend on
// every input bit) are used. One multiply keeps scrambled_zipfian within its time budget;
// four rounds still scatter neighbouring ranks across the keyspace.
func round(x, k uint64) uint64 {
	return (x ^ k) * 0x9e3779b97f4a7c15
}

// mix64 is the splitmix64 finalizer: a fast, well-avalanching 64-bit mixer.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
